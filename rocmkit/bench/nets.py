"""rocmkit's own small implementations of the model set, in plain torch.

Used when ``transformers`` is not installed (and always for the CNN and the
MLP). They follow the published architectures closely enough to give
TorchInductor the same kinds of graphs (fused layer norms, attention,
relative position bias, GELU/ReLU MLPs, tied heads, conv + batch norm), but
carry no dropout: PyTorch's harness sets dropout to ~0 as well, so that
eager and compiled runs can be compared.

Imported only inside the benchmark child process: it imports torch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _SelfAttention(nn.Module):
    """Multi-head attention through ``scaled_dot_product_attention``."""

    def __init__(self, dim: int, heads: int, *, bias: bool = True, scale: float | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim, bias=bias)
        self.k = nn.Linear(dim, dim, bias=bias)
        self.v = nn.Linear(dim, dim, bias=bias)
        self.o = nn.Linear(dim, dim, bias=bias)
        self.scale = scale

    def _split(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(
        self,
        x: Tensor,
        kv: Tensor | None = None,
        *,
        causal: bool = False,
        bias: Tensor | None = None,
    ) -> Tensor:
        src = x if kv is None else kv
        q, k, v = self._split(self.q(x)), self._split(self.k(src)), self._split(self.v(src))
        if bias is not None and causal:
            t = x.shape[1]
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            bias = bias.masked_fill(~mask, float("-inf"))
            causal = False
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal, scale=self.scale)
        b, h, t, dh = out.shape
        result: Tensor = self.o(out.transpose(1, 2).reshape(b, t, h * dh))
        return result


# --- GPT-2 style decoder (DistilGPT2 shape at "full") ------------------------------------


class _Gpt2Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = _SelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x), causal=True)
        result: Tensor = x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return result


class Gpt2LM(nn.Module):
    def __init__(self, *, vocab: int, positions: int, dim: int, layers: int, heads: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(positions, dim)
        self.blocks = nn.ModuleList(_Gpt2Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, input_ids: Tensor) -> Tensor:
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied LM head, as GPT-2


# --- BERT / CamemBERT style encoder with a masked-LM head ---------------------------------


class _BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int, inner: int) -> None:
        super().__init__()
        self.attn = _SelfAttention(dim, heads)
        self.ln1 = nn.LayerNorm(dim, eps=1e-5)
        self.fc = nn.Linear(dim, inner)
        self.out = nn.Linear(inner, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x: Tensor) -> Tensor:
        x = self.ln1(x + self.attn(x))  # post-LN, as BERT and RoBERTa
        result: Tensor = self.ln2(x + self.out(F.gelu(self.fc(x))))
        return result


class BertMLM(nn.Module):
    def __init__(self, *, vocab: int, positions: int, dim: int, layers: int, heads: int, inner: int) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, dim, padding_idx=1)
        self.pos = nn.Embedding(positions, dim)
        self.token_type = nn.Embedding(1, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-5)
        self.layers = nn.ModuleList(_BertLayer(dim, heads, inner) for _ in range(layers))
        self.head_dense = nn.Linear(dim, dim)
        self.head_ln = nn.LayerNorm(dim, eps=1e-5)
        self.head_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, input_ids: Tensor) -> Tensor:
        # RoBERTa/CamemBERT positions start after the padding index.
        pos = torch.arange(2, input_ids.shape[1] + 2, device=input_ids.device)
        x = self.word(input_ids) + self.pos(pos) + self.token_type.weight[0]
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        h = self.head_ln(F.gelu(self.head_dense(x)))
        return F.linear(h, self.word.weight, self.head_bias)


# --- T5 style encoder-decoder (T5-small shape at "full") ----------------------------------


class _RmsNorm(nn.Module):
    """T5's layer norm: scale only, no mean subtraction, no bias."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps)).to(x.dtype)


def _relative_bucket(relative: Tensor, *, bidirectional: bool, buckets: int, max_distance: int) -> Tensor:
    """T5's relative position buckets: exact for near offsets, logarithmic beyond."""
    out = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        out += (relative > 0).long() * buckets
        relative = relative.abs()
    else:
        relative = -torch.clamp(relative, max=0)
    exact = buckets // 2
    is_small = relative < exact
    large = (
        exact
        + (
            torch.log(relative.float().clamp(min=1) / exact)
            / math.log(max_distance / exact)
            * (buckets - exact)
        ).long()
    )
    large = torch.clamp(large, max=buckets - 1)
    return out + torch.where(is_small, relative, large)


class _T5Bias(nn.Module):
    def __init__(
        self, heads: int, *, bidirectional: bool, buckets: int = 32, max_distance: int = 128
    ) -> None:
        super().__init__()
        self.table = nn.Embedding(buckets, heads)
        self.bidirectional = bidirectional
        self.buckets = buckets
        self.max_distance = max_distance

    def forward(self, q_len: int, k_len: int, device: torch.device) -> Tensor:
        ctx = torch.arange(q_len, device=device)[:, None]
        mem = torch.arange(k_len, device=device)[None, :]
        bucket = _relative_bucket(
            mem - ctx, bidirectional=self.bidirectional, buckets=self.buckets, max_distance=self.max_distance
        )
        result: Tensor = self.table(bucket).permute(2, 0, 1).unsqueeze(0)  # (1, heads, q, k)
        return result


class _T5Ffn(nn.Module):
    def __init__(self, dim: int, inner: int) -> None:
        super().__init__()
        self.ln = _RmsNorm(dim)
        self.wi = nn.Linear(dim, inner, bias=False)
        self.wo = nn.Linear(inner, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        result: Tensor = x + self.wo(F.relu(self.wi(self.ln(x))))
        return result


class _T5EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, inner: int) -> None:
        super().__init__()
        self.ln = _RmsNorm(dim)
        self.attn = _SelfAttention(dim, heads, bias=False, scale=1.0)  # T5 folds the scale into init
        self.ffn = _T5Ffn(dim, inner)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        result: Tensor = self.ffn(x + self.attn(self.ln(x), bias=bias))
        return result


class _T5DecoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, inner: int) -> None:
        super().__init__()
        self.ln1 = _RmsNorm(dim)
        self.attn = _SelfAttention(dim, heads, bias=False, scale=1.0)
        self.ln2 = _RmsNorm(dim)
        self.cross = _SelfAttention(dim, heads, bias=False, scale=1.0)
        self.ffn = _T5Ffn(dim, inner)

    def forward(self, x: Tensor, memory: Tensor, bias: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x), causal=True, bias=bias)
        x = x + self.cross(self.ln2(x), memory)
        result: Tensor = self.ffn(x)
        return result


class T5(nn.Module):
    def __init__(self, *, vocab: int, dim: int, layers: int, heads: int, inner: int) -> None:
        super().__init__()
        self.dim = dim
        self.shared = nn.Embedding(vocab, dim)
        self.enc_bias = _T5Bias(heads, bidirectional=True)
        self.dec_bias = _T5Bias(heads, bidirectional=False)
        self.encoder = nn.ModuleList(_T5EncoderLayer(dim, heads, inner) for _ in range(layers))
        self.enc_ln = _RmsNorm(dim)
        self.decoder = nn.ModuleList(_T5DecoderLayer(dim, heads, inner) for _ in range(layers))
        self.dec_ln = _RmsNorm(dim)

    def forward(self, input_ids: Tensor, decoder_input_ids: Tensor) -> Tensor:
        x = self.shared(input_ids)
        bias = self.enc_bias(x.shape[1], x.shape[1], x.device).to(x.dtype)
        for layer in self.encoder:
            x = layer(x, bias)
        memory = self.enc_ln(x)
        y = self.shared(decoder_input_ids)
        t = y.shape[1]
        dbias = self.dec_bias(t, t, y.device).to(y.dtype)
        for dlayer in self.decoder:
            y = dlayer(y, memory, dbias)
        y = self.dec_ln(y) * self.dim**-0.5  # tied head rescaling, as T5
        return F.linear(y, self.shared.weight)


# --- ResNet style CNN ---------------------------------------------------------------------


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.down(x))


class ResNet(nn.Module):
    """ResNet-18 layout (BasicBlocks, four stages) with configurable widths and depth."""

    def __init__(self, *, width: int, blocks: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        layers: list[nn.Module] = []
        cin = width
        for stage in range(4):
            cout = width * 2**stage
            for i in range(blocks):
                layers.append(_BasicBlock(cin, cout, 2 if (i == 0 and stage > 0) else 1))
                cin = cout
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.body(self.stem(x))
        result: Tensor = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return result


# --- MLP ----------------------------------------------------------------------------------


class Mlp(nn.Module):
    def __init__(self, *, dim: int, hidden: int, layers: int, classes: int) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        cin = dim
        for _ in range(layers):
            blocks += [nn.Linear(cin, hidden), nn.LayerNorm(hidden), nn.GELU()]
            cin = hidden
        blocks.append(nn.Linear(cin, classes))
        self.net = nn.Sequential(*blocks)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.net(x)
        return out
