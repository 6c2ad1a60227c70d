"""The HF and TIMM suites as data: PyTorch's lists, batch sizes, sources; the tiny config rules."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from rocmkit.bench import catalog, hf
from rocmkit.bench.models import select, suite_models
from rocmkit.errors import DataError, UsageError

# From PyTorch's benchmarks/dynamo/huggingface_models_list.txt (the commit cited in the data file).
LIST_SPOT_CHECKS = {
    "AlbertForMaskedLM": 8,
    "DistilBertForQuestionAnswering": 512,
    "GPTJForCausalLM": 1,
    "BlenderbotSmallForCausalLM": 256,
    "YituTechConvBert": 32,
    "meta-llama/Llama-3.2-1B": 8,
    "openai/gpt-oss-20b": 8,
}


def test_hf_suite_is_pytorchs_list_with_its_batch_sizes() -> None:
    data = catalog.load_hf()
    names = [e.name for e in data.hf]
    assert len(names) == 55  # 48 classic entries and 7 LLM entries
    assert names[0] == "AlbertForMaskedLM" and names[47] == "YituTechConvBert"
    assert names[48:] == [
        "meta-llama/Llama-3.2-1B",
        "google/gemma-2-2b",
        "google/gemma-3-4b-it",
        "openai/whisper-tiny",
        "Qwen/Qwen3-0.6B",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "openai/gpt-oss-20b",
    ]
    by_name = {e.name: e for e in data.hf}
    for name, batch in LIST_SPOT_CHECKS.items():
        assert by_name[name].batch == batch
    # Sequence lengths of huggingface.py get_sequence_length.
    assert by_name["GPT2ForSequenceClassification"].seq == 1024
    assert by_name["OPTForCausalLM"].seq == 2048
    assert by_name["TrOCRForCausalLM"].seq == 256
    assert by_name["BertForMaskedLM"].seq == 512
    # Special cases of the harness, kept as data.
    assert by_name["GPT2ForSequenceClassification"].pad_token_id == 0
    assert by_name["GPTNeoForSequenceClassification"].pad_token_id == 0
    assert by_name["DistillGPT2"].hub["n_layer"] == 6 and by_name["DistillGPT2"].config == "GPT2Config"
    for e in data.hf:
        assert e.sources and all(s in data.sources for s in e.sources)
        if e.hub:
            assert any(s.startswith("hub_") for s in e.sources), e.name


def test_timm_suite_is_pytorchs_list() -> None:
    data = catalog.load_timm()
    assert len(data.timm) == 18
    by_name = {e.name: e.batch for e in data.timm}
    assert by_name["ghostnet_100"] == 512 and by_name["inception_v3"] == 128
    assert [s.name for s in suite_models("timm")][:2] == ["adv_inception_v3", "beit_base_patch16_224"]


def test_suites_select_and_reject() -> None:
    assert [s.name for s in select(["T5Small", "BertForMaskedLM"], {}, "huggingface")] == [
        "T5Small",
        "BertForMaskedLM",
    ]
    with pytest.raises(UsageError, match="unknown model 'distilgpt2'"):
        select(["distilgpt2"], {}, "huggingface")  # a builtin name is not in the HF suite
    with pytest.raises(UsageError, match="unknown suite"):
        suite_models("torchbench")


def _write(tmp_path: Path, body: str) -> Path:
    # A new name each time: the loader caches by path.
    path = tmp_path / f"hf{len(list(tmp_path.iterdir()))}.toml"
    path.write_text('schema = 1\n[sources]\nlist = "x"\n[tiny]\nbatch = 2\n' + body)
    return path


def test_malformed_suite_data_is_a_data_error(tmp_path: Path) -> None:
    good = '[[model]]\nname = "A"\nclass = "BertForMaskedLM"\nbatch = 4\nseq = 8\nsources = ["list"]\n'
    assert catalog.load_hf(_write(tmp_path, good)).hf[0].batch == 4
    for bad, msg in (
        (good.replace('["list"]', '["nowhere"]'), "unknown source"),
        (good.replace("batch = 4", "batch = 0"), "positive integer"),
        (good.replace('"BertForMaskedLM"', '"not a class"'), "not a class name"),
        (good + good, "repeated"),
        (good + "[model.hub]\nvocab_size = 3\n", "no config class"),
    ):
        with pytest.raises(DataError, match=msg):
            catalog.load_hf(_write(tmp_path, bad))


TINY = {
    "layers": 2,
    "width": 64,
    "heads": 2,
    "kv_heads": 1,
    "ffn": 128,
    "vocab": 1024,
    "experts": 4,
    "batch": 2,
    "seq": 32,
}


def test_tiny_config_shrinks_what_the_config_has_and_fits_gptj_rotary_dim() -> None:
    gptj_defaults = SimpleNamespace(
        n_layer=28,
        n_embd=4096,
        n_head=16,
        rotary_dim=64,
        vocab_size=50400,
        n_inner=None,
        bos_token_id=50256,
        eos_token_id=50256,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.0,
    )
    entry = catalog.HfEntry(name="GPTJForCausalLM", cls="GPTJForCausalLM", config=None, batch=1, seq=128)
    values = hf.config_values(entry, gptj_defaults, "tiny", TINY)
    assert values["n_layer"] == 2 and values["n_embd"] == 64 and values["n_head"] == 2
    assert values["rotary_dim"] == 32  # the head size: GPT-J's rotary dim must fit in it
    assert values["vocab_size"] == 1024
    assert values["bos_token_id"] == values["eos_token_id"] == 1023  # inside the smaller embedding
    assert values["resid_pdrop"] == values["embd_pdrop"] == 0.0  # dropout off, as the harness
    assert "n_inner" not in values  # None in the defaults: the config derives it
    assert values["use_cache"] is False


def test_full_config_is_the_published_values_and_the_pad_token() -> None:
    data = {e.name: e for e in catalog.load_hf().hf}
    defaults = SimpleNamespace(n_layer=12, n_embd=768, hidden_dropout_prob=0.1)
    values = hf.config_values(data["DistillGPT2"], defaults, "full", TINY)
    assert values["n_layer"] == 6 and values["n_embd"] == 768 and values["vocab_size"] == 50257
    assert values["hidden_dropout_prob"] == 0.0
    gpt2cls = hf.config_values(data["GPT2ForSequenceClassification"], SimpleNamespace(), "full", TINY)
    assert gpt2cls["pad_token_id"] == 0
