"""Build one model of the Hugging Face suite, offline, the way PyTorch's ``huggingface.py`` does.

- The model is ``ModelClass(ConfigClass(**values))``: random weights, no hub.
  ``values`` are the published ones kept in ``huggingface.toml`` where PyTorch
  reads a hub config, the config class's defaults otherwise; ``tiny`` shrinks
  every width, depth and vocabulary the config has to 2 layers of width 64.
- ``pad_token_id = 0`` for GPT-2/GPT-Neo/GPT-J sequence classification and
  Roberta (the harness does the same: batch > 1 needs a pad token).
- Dropout and LayerDrop off (the harness sets them to ~0), so eager and
  compiled training steps can be compared; the KV cache off.
- Inputs as ``generate_inputs_for_model``: random token ids (Roberta: zeros;
  Bart: the last token is EOS), ``decoder_input_ids`` for T5/MT5/M2M100, and
  the labels the model's loss needs; the loss is the model's own (the first
  output), as the harness's ``compute_loss``.

Runs in the benchmark child only: it imports torch and transformers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocmkit.bench.built import Built
from rocmkit.bench.catalog import HfEntry

# Config attribute names by role, across the architectures of the list. Only those the
# config class has are set, so one table serves BERT, GPT-2, T5, Bart, XLNet ...
_LAYERS = (
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_layers",
    "num_decoder_layers",
    "encoder_layers",
    "decoder_layers",
)
_WIDTH = ("hidden_size", "n_embd", "d_model", "dim", "embedding_size", "word_embed_proj_dim")
_HEADS = (
    "num_attention_heads",
    "n_head",
    "n_heads",
    "num_heads",
    "attention_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
)
_FFN = (
    "intermediate_size",
    "d_ff",
    "d_inner",
    "n_inner",
    "ffn_dim",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "hidden_dim",
    "intra_bottleneck_size",
)
# Head size follows width / heads; GPT-J's rotary dimension must fit in it.
_HEAD_DIM = ("head_dim", "d_kv", "d_head", "rotary_dim")


def _config_class(entry: HfEntry, model_cls: Any) -> Any:
    import transformers

    if entry.config:
        return getattr(transformers, entry.config)
    return model_cls.config_class


def config_values(entry: HfEntry, defaults: Any, size: str, tiny: Mapping[str, int]) -> dict[str, Any]:
    """The keyword arguments for the config class: published values, then the tiny shape."""
    values: dict[str, Any] = dict(entry.hub)
    if entry.pad_token_id is not None:
        values["pad_token_id"] = entry.pad_token_id
    if size == "tiny":
        width, heads = tiny["width"], tiny["heads"]
        role_values = (
            (_LAYERS, tiny["layers"]),
            (_WIDTH, width),
            (_HEADS, heads),
            (_FFN, tiny["ffn"]),
            (_HEAD_DIM, width // heads),
            (("vocab_size",), tiny["vocab"]),
            (("num_key_value_heads",), tiny["kv_heads"]),
            (("num_local_experts",), tiny["experts"]),
            (("num_experts_per_tok",), min(2, tiny["experts"])),
        )
        for names, value in role_values:
            for name in names:
                if getattr(defaults, name, None) is not None or name in values:
                    values[name] = value
        if isinstance(values.get("attention_window"), list) or hasattr(defaults, "attention_window"):
            values["attention_window"] = tiny["seq"] // 2
        # Special token ids must index the smaller embedding (a padding_idx out of range is an error).
        vocab = tiny["vocab"]
        for name in dir(defaults):
            if name.endswith("_token_id"):
                token: Any = values.get(name, getattr(defaults, name, None))
                if isinstance(token, int) and token >= vocab:
                    values[name] = vocab - 1
                elif isinstance(token, list):
                    values[name] = [min(v, vocab - 1) for v in token if isinstance(v, int)]
        values.update(entry.tiny)
    # Dropout off (the harness: 1e-30), LayerDrop off, no KV cache.
    for name in dir(defaults):
        if "drop" in name and isinstance(getattr(defaults, name, None), float):
            values[name] = 0.0
    values["use_cache"] = False
    return values


def _ints(low: int, high: int, shape: tuple[int, ...], gen: Any) -> Any:
    import torch

    return torch.randint(low, max(high, low + 1), shape, generator=gen, dtype=torch.int64)


def make_inputs(entry: HfEntry, config: Any, batch: int, seq: int) -> dict[str, Any]:
    """``generate_inputs_for_model`` with ``include_loss_args=True``, seeded."""
    import torch

    gen = torch.Generator().manual_seed(0)
    name, vocab = entry.name, int(config.vocab_size)
    if entry.cls.startswith("Whisper"):
        mels = int(config.num_mel_bins)
        frames = 2 * int(config.max_source_positions)
        labels = _ints(0, vocab, (batch, min(seq, int(config.max_target_positions))), gen)
        return {"input_features": torch.randn(batch, mels, frames, generator=gen), "labels": labels}
    # Roberta's ids are all 0 in the harness (its rand_int_tensor(0, 1)), everything else random.
    ids = _ints(0, 1 if name.startswith("Roberta") else vocab, (batch, seq), gen)
    if "Bart" in name and config.eos_token_id is not None:
        ids[:, -1] = config.eos_token_id
    inputs: dict[str, Any] = {"input_ids": ids}
    if name.startswith(("T5", "M2M100", "MT5")):
        inputs["decoder_input_ids"] = ids
    cls = entry.cls
    if cls.endswith("QuestionAnswering"):
        inputs["start_positions"] = _ints(0, seq, (batch,), gen)
        inputs["end_positions"] = _ints(0, seq, (batch,), gen)
    elif cls.endswith("SequenceClassification"):
        inputs["labels"] = _ints(0, int(config.num_labels) - 1, (batch,), gen)
    elif cls.endswith("ForConditionalGeneration"):
        inputs["labels"] = _ints(0, vocab - 1, (batch, seq), gen)
    else:  # MaskedLM, CausalLM, LMHeadModel, and the hub-config extras
        inputs["labels"] = _ints(0, vocab, (batch, seq), gen)
    return inputs


def _wrap(model: Any, names: tuple[str, ...]) -> Any:
    """Positional tensors in, the output's tensors out (the loss first), as the harness needs."""
    import torch

    class KeywordModel(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            out = self.inner(**dict(zip(names, args, strict=True)))
            return tuple(v for v in out.values() if isinstance(v, torch.Tensor))

    return KeywordModel(model)


def build(entry: HfEntry, size: str, tiny: Mapping[str, int]) -> Built:
    try:
        import transformers
    except ImportError as exc:
        raise RuntimeError(
            f"transformers is not importable ({exc}); pip install transformers, "
            "or `rocmkit install --with transformers`"
        ) from exc
    model_cls = getattr(transformers, entry.cls, None)
    if model_cls is None:
        raise RuntimeError(
            f"transformers {transformers.__version__} has no {entry.cls} (removed or renamed in this version)"
        )
    config_cls = _config_class(entry, model_cls)
    config = config_cls(**config_values(entry, config_cls(), size, tiny))
    model = model_cls(config)
    batch, seq = (tiny["batch"], tiny["seq"]) if size == "tiny" else (entry.batch, entry.seq)
    inputs = make_inputs(entry, config, batch, seq)
    return Built(
        module=_wrap(model, tuple(inputs)),
        inputs=tuple(inputs.values()),
        impl=f"transformers {transformers.__version__}",
        batch_size=batch,
        loss="first",
    )
