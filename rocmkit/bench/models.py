"""The built-in model set: five models built from configs with random weights, no downloads.

Each model comes at three sizes: ``tiny`` (the CPU default: the whole set runs
in minutes on two cores), ``small``, and ``full`` (the GPU default: the real
published shapes and the batch sizes of PyTorch's HF benchmark list). When
``transformers`` is importable the three transformer models use its real
classes built from config (offline: a config object, never the hub);
otherwise rocmkit's own implementations in :mod:`rocmkit.bench.nets`.

More models can be added without touching rocmkit: ``ROCMKIT_BENCH_EXTRA_MODELS``
lists Python files (``os.pathsep``-separated), each defining ``MODELS``, a
sequence of :class:`ModelSpec`. The tests use this to add models that compile
wrongly or fail to compile. Such files should import torch inside their build
functions, so listing the models stays cheap.

This module does not import torch; the build functions do.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rocmkit.bench.built import Built
from rocmkit.errors import UsageError

Size = Literal["tiny", "small", "full"]
Impl = Literal["auto", "rocmkit", "transformers"]
SIZES: tuple[Size, ...] = ("tiny", "small", "full")
EXTRA_MODELS_ENV = "ROCMKIT_BENCH_EXTRA_MODELS"


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    name: str
    # Which tolerance table applies (PyTorch's harness: huggingface, timm).
    suite: Literal["huggingface", "timm", "other"]
    description: str
    sizes: Mapping[str, Mapping[str, int]]
    build: Callable[[Mapping[str, int], Impl], Built]


def _tokens(batch: int, seq: int, vocab: int, seed: int = 0) -> Any:
    import torch

    gen = torch.Generator().manual_seed(seed)
    # Token 0..2 are special in these vocabularies; random ids avoid them like real text.
    return torch.randint(3, vocab, (batch, seq), generator=gen)


def _have_transformers(impl: Impl) -> bool:
    if impl == "rocmkit":
        return False
    found = importlib.util.find_spec("transformers") is not None
    if impl == "transformers" and not found:
        raise UsageError("--impl transformers: transformers is not installed", "pip install transformers")
    return found


def _logits_only(model: Any) -> Any:
    """Wrap a transformers model so the harness sees one tensor: its logits."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            names = ("input_ids", "decoder_input_ids")
            return self.inner(**dict(zip(names, args, strict=False))).logits

    return LogitsOnly(model)


# The transformers path is small on purpose: it only swaps in the real classes.
# transformers is in the test extra, so CI runs the three through its classes
# (tests/integration/test_bench_models.py, the model set's rows).


def _either(cfg: Mapping[str, int], impl: Impl, inputs: tuple[Any, ...], hf: Callable[[], Any],
    own: Callable[[], Any]) -> Built:
    """The one rule for the three transformer models: transformers' class (``hf``, wrapped to its
    logits) when it is there and wanted, else rocmkit's own (``own``); each built only if chosen."""
    if _have_transformers(impl):
        return Built(module=_logits_only(hf()), inputs=inputs, impl="transformers", batch_size=cfg["batch"])
    return Built(module=own(), inputs=inputs, impl="rocmkit", batch_size=cfg["batch"])


def _build_gpt2(cfg: Mapping[str, int], impl: Impl) -> Built:
    def hf() -> Any:
        from transformers import GPT2Config, GPT2LMHeadModel

        return GPT2LMHeadModel(GPT2Config(
            vocab_size=cfg["vocab"], n_positions=cfg["positions"], n_embd=cfg["dim"], n_layer=cfg["layers"],
            n_head=cfg["heads"], resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
        ))

    def own() -> Any:
        from rocmkit.bench.nets import Gpt2LM

        return Gpt2LM(vocab=cfg["vocab"], positions=cfg["positions"], dim=cfg["dim"], layers=cfg["layers"],
            heads=cfg["heads"])

    return _either(cfg, impl, (_tokens(cfg["batch"], cfg["seq"], cfg["vocab"]),), hf, own)


def _build_t5(cfg: Mapping[str, int], impl: Impl) -> Built:
    def hf() -> Any:
        from transformers import T5Config, T5ForConditionalGeneration

        return T5ForConditionalGeneration(T5Config(
            vocab_size=cfg["vocab"], d_model=cfg["dim"], d_kv=cfg["dim"] // cfg["heads"], d_ff=cfg["inner"],
            num_layers=cfg["layers"], num_heads=cfg["heads"], dropout_rate=0.0, use_cache=False,
        ))

    def own() -> Any:
        from rocmkit.bench.nets import T5

        return T5(vocab=cfg["vocab"], dim=cfg["dim"], layers=cfg["layers"], heads=cfg["heads"], inner=cfg["inner"])

    inputs = (
        _tokens(cfg["batch"], cfg["seq"], cfg["vocab"], seed=0),
        _tokens(cfg["batch"], cfg["seq"], cfg["vocab"], seed=1),
    )
    return _either(cfg, impl, inputs, hf, own)


def _build_camembert(cfg: Mapping[str, int], impl: Impl) -> Built:
    def hf() -> Any:
        from transformers import CamembertConfig, CamembertForMaskedLM

        return CamembertForMaskedLM(CamembertConfig(
            vocab_size=cfg["vocab"], hidden_size=cfg["dim"], num_hidden_layers=cfg["layers"],
            num_attention_heads=cfg["heads"], intermediate_size=cfg["inner"],
            max_position_embeddings=cfg["positions"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        ))

    def own() -> Any:
        from rocmkit.bench.nets import BertMLM

        return BertMLM(vocab=cfg["vocab"], positions=cfg["positions"], dim=cfg["dim"], layers=cfg["layers"],
            heads=cfg["heads"], inner=cfg["inner"])

    return _either(cfg, impl, (_tokens(cfg["batch"], cfg["seq"], cfg["vocab"]),), hf, own)


def _build_resnet(cfg: Mapping[str, int], impl: Impl) -> Built:
    import torch

    from rocmkit.bench.nets import ResNet

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(cfg["batch"], 3, cfg["image"], cfg["image"], generator=gen)
    model = ResNet(width=cfg["width"], blocks=cfg["blocks"], classes=cfg["classes"])
    return Built(module=model, inputs=(x,), impl="rocmkit", batch_size=cfg["batch"])


def _build_mlp(cfg: Mapping[str, int], impl: Impl) -> Built:
    import torch

    from rocmkit.bench.nets import Mlp

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(cfg["batch"], cfg["dim"], generator=gen)
    model = Mlp(dim=cfg["dim"], hidden=cfg["hidden"], layers=cfg["layers"], classes=cfg["classes"])
    return Built(module=model, inputs=(x,), impl="rocmkit", batch_size=cfg["batch"])


# "full" shapes are the published configs (distilgpt2, t5-small, camembert-base,
# resnet18) with the batch sizes of PyTorch's huggingface_models_list.txt
# (DistillGPT2 32, T5Small 8, CamemBert 32) and timm-style 224x224 images.
BUILTIN: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="distilgpt2",
        suite="huggingface",
        description="GPT-2 style decoder, causal LM (DistilGPT2 shape at full)",
        sizes={
            "tiny": {
                "vocab": 512,
                "positions": 64,
                "dim": 64,
                "layers": 2,
                "heads": 2,
                "batch": 2,
                "seq": 32,
            },
            "small": {
                "vocab": 8192,
                "positions": 256,
                "dim": 256,
                "layers": 4,
                "heads": 4,
                "batch": 8,
                "seq": 128,
            },
            "full": {
                "vocab": 50257,
                "positions": 1024,
                "dim": 768,
                "layers": 6,
                "heads": 12,
                "batch": 32,
                "seq": 512,
            },
        },
        build=_build_gpt2,
    ),
    ModelSpec(
        name="t5_small",
        suite="huggingface",
        description="T5 style encoder-decoder with relative position bias (T5-small shape at full)",
        sizes={
            "tiny": {"vocab": 512, "dim": 64, "inner": 128, "layers": 1, "heads": 2, "batch": 2, "seq": 32},
            "small": {
                "vocab": 8192,
                "dim": 256,
                "inner": 1024,
                "layers": 3,
                "heads": 4,
                "batch": 4,
                "seq": 128,
            },
            "full": {
                "vocab": 32128,
                "dim": 512,
                "inner": 2048,
                "layers": 6,
                "heads": 8,
                "batch": 8,
                "seq": 512,
            },
        },
        build=_build_t5,
    ),
    ModelSpec(
        name="camembert",
        suite="huggingface",
        description="BERT/CamemBERT style encoder, masked LM (camembert-base shape at full)",
        sizes={
            "tiny": {
                "vocab": 512,
                "positions": 66,
                "dim": 64,
                "inner": 128,
                "layers": 2,
                "heads": 2,
                "batch": 2,
                "seq": 32,
            },
            "small": {
                "vocab": 8192,
                "positions": 258,
                "dim": 256,
                "inner": 1024,
                "layers": 4,
                "heads": 4,
                "batch": 8,
                "seq": 128,
            },
            "full": {
                "vocab": 32005,
                "positions": 514,
                "dim": 768,
                "inner": 3072,
                "layers": 12,
                "heads": 12,
                "batch": 32,
                "seq": 512,
            },
        },
        build=_build_camembert,
    ),
    ModelSpec(
        name="resnet",
        suite="timm",
        description="ResNet style CNN, BasicBlocks with batch norm (ResNet-18 shape at full)",
        sizes={
            "tiny": {"width": 8, "blocks": 1, "classes": 10, "batch": 4, "image": 32},
            "small": {"width": 32, "blocks": 2, "classes": 100, "batch": 16, "image": 64},
            "full": {"width": 64, "blocks": 2, "classes": 1000, "batch": 64, "image": 224},
        },
        build=_build_resnet,
    ),
    ModelSpec(
        name="mlp",
        suite="other",
        description="MLP: Linear + LayerNorm + GELU stacks",
        sizes={
            "tiny": {"dim": 128, "hidden": 256, "layers": 3, "classes": 10, "batch": 32},
            "small": {"dim": 512, "hidden": 1024, "layers": 4, "classes": 100, "batch": 128},
            "full": {"dim": 1024, "hidden": 4096, "layers": 4, "classes": 1000, "batch": 512},
        },
        build=_build_mlp,
    ),
)


def _load_extra(path: Path) -> list[ModelSpec]:
    if not path.is_file():
        raise UsageError(f"{EXTRA_MODELS_ENV}: {path} is not a file", "list Python files defining MODELS")
    spec = importlib.util.spec_from_file_location(f"rocmkit_bench_extra_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{EXTRA_MODELS_ENV}: cannot load {path}", "name a .py file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: its error, in one line, is the message
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise UsageError(
            f"{EXTRA_MODELS_ENV}: {path} fails to load{where}: {type(exc).__name__}: {exc}".splitlines()[0][:300],
            f"fix {path}, or drop it from {EXTRA_MODELS_ENV}",
        ) from None
    models = getattr(module, "MODELS", None)
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, ModelSpec) for m in models):
        raise UsageError(
            f"{EXTRA_MODELS_ENV}: {path} does not define MODELS as a list of ModelSpec",
            "define MODELS = [rocmkit.bench.models.ModelSpec(...), ...]",
        )
    return list(models)


def _dashboard_specs(suite: str) -> list[ModelSpec]:
    """One of PyTorch's dashboard lists (``matrices/bench/``) as specs: one rule for both lists,
    which differ only in their entries, their builder module and how an entry is described."""
    from rocmkit.bench import catalog

    data = catalog.load_hf() if suite == "huggingface" else catalog.load_timm()
    entries: tuple[catalog.HfEntry | catalog.TimmEntry, ...] = data.hf if suite == "huggingface" else data.timm
    tiny = data.tiny

    def builder(entry: catalog.HfEntry | catalog.TimmEntry) -> Callable[[Mapping[str, int], Impl], Built]:
        def build(cfg: Mapping[str, int], impl: Impl) -> Built:
            size = "tiny" if cfg.get("tiny") else "full"
            if isinstance(entry, catalog.HfEntry):
                from rocmkit.bench import hf

                return hf.build(entry, size, tiny)
            from rocmkit.bench import timm_suite

            return timm_suite.build(entry, size, tiny)

        return build

    def describe(e: catalog.HfEntry | catalog.TimmEntry) -> str:
        if isinstance(e, catalog.HfEntry):
            return f"{e.cls}, batch {e.batch} x {e.seq} tokens at full" + (f" ({e.note})" if e.note else "")
        return f"timm.create_model({e.name!r}), batch {e.batch} at full"

    return [
        ModelSpec(
            name=e.name,
            suite="huggingface" if suite == "huggingface" else "timm",
            description=describe(e),
            sizes={"tiny": {"tiny": 1, "batch": tiny["batch"]}, "full": {"tiny": 0, "batch": e.batch}},
            build=builder(e),
        )
        for e in entries
    ]


def suite_models(suite: str) -> list[ModelSpec]:
    """The models of one suite: ``builtin``, ``huggingface`` (PyTorch's HF list) or ``timm``."""
    if suite == "builtin":
        return list(BUILTIN)
    if suite in ("huggingface", "timm"):
        return _dashboard_specs(suite)
    raise UsageError(f"unknown suite {suite!r}", "choose builtin, huggingface or timm")


def all_models(environ: Mapping[str, str] | None = None, suite: str = "builtin") -> dict[str, ModelSpec]:
    """The suite's models plus any extra models named by ``ROCMKIT_BENCH_EXTRA_MODELS``."""
    env = os.environ if environ is None else environ
    out = {m.name: m for m in suite_models(suite)}
    for item in (env.get(EXTRA_MODELS_ENV) or "").split(os.pathsep):
        if item.strip():
            for spec in _load_extra(Path(item.strip())):
                out[spec.name] = spec
    return out


def select(
    names: Sequence[str], environ: Mapping[str, str] | None = None, suite: str = "builtin"
) -> list[ModelSpec]:
    """The models named (in that order), or every model when ``names`` is empty."""
    known = all_models(environ, suite)
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"unknown model {', '.join(map(repr, unknown))}",
            f"choose from {', '.join(known)}" if len(known) <= 12 else "see `rocmkit bench models --list`",
        )
    return [known[n] for n in dict.fromkeys(names)]
