#!/usr/bin/python3
"""Independent NumPy reference of Gemma2ForCausalLM and Gemma3ForCausalLM (HF transformers modeling_gemma2.py /
modeling_gemma3.py, text model only), written from those definitions, not from deepinfer's C++. Reuses
llama_ref.py's safetensors reader and log_softmax only. Same interface as llama_ref.Model (cfg, logits(ids)).

Conventions (all as HF computes them; x is [n, hidden]):
  GemmaRMSNorm(x, w) = x / sqrt(mean(x^2) + eps) * (1 + w)      (the checkpoint stores w, initialised at 0)
  h = embed[ids] * normalizer, normalizer = sqrt(hidden) rounded to the compute dtype
  decoder layer ("sandwich" norms):
      x = x + post_attention_layernorm(Attn(input_layernorm(x)))
      x = x + post_feedforward_layernorm(MLP(pre_feedforward_layernorm(x)))
  MLP(x) = down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)),
      gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))      (hidden_activation gelu_pytorch_tanh)
  Attn: q, k, v projections (no bias), heads of head_dim (which may differ from hidden / heads); Gemma-3 only:
      q_norm / k_norm = GemmaRMSNorm over each head's head_dim; then rotate_half RoPE
      (inv_freq_i = base^(-2i/head_dim)); scores = q . k * query_pre_attn_scalar^-0.5;
      Gemma-2: scores = tanh(scores / attn_logit_softcapping) * attn_logit_softcapping (null = none);
      causal mask, and on sliding layers key j visible iff i - W < j <= i (W = sliding_window); softmax; GQA.
  Layer types: `layer_types` when present, else layer i slides iff (i + 1) % pattern != 0, pattern 2 for
      Gemma-2 and sliding_window_pattern (default 6) for Gemma-3.
  RoPE bases: Gemma-2 rope_theta everywhere. Gemma-3: global (full) layers rope_theta with rope_scaling
      (linear: inv_freq / factor), local (sliding) layers rope_local_base_freq (default 10000), unscaled.
  Output: GemmaRMSNorm(model.norm), logits = h @ embed^T (tied; lm_head.weight when untied);
      Gemma-2: logits = tanh(logits / final_logit_softcapping) * final_logit_softcapping (null = none).
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref  # noqa: E402
from llama_ref import RefError, log_softmax  # noqa: E402,F401

np = llama_ref.np

_ARCH_BY_CLASS = {"Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3"}


class Config:
    def __init__(self, cfg):
        self.raw = cfg
        arch = None
        for a in cfg.get("architectures") or []:
            arch = _ARCH_BY_CLASS.get(a, arch)
        if arch is None:
            raise RefError("unsupported architecture %s" % cfg.get("architectures"))
        self.arch = arch
        g3 = arch == "gemma3"
        g = cfg.get
        self.hidden = int(g("hidden_size"))
        self.inter = int(g("intermediate_size"))
        self.n_layers = int(g("num_hidden_layers"))
        self.n_heads = int(g("num_attention_heads"))
        self.n_kv = int(g("num_key_value_heads", self.n_heads))
        self.head_dim = int(g("head_dim", 256))
        self.vocab = int(g("vocab_size"))
        self.eps = float(g("rms_norm_eps", 1e-6))
        self.tie = bool(g("tie_word_embeddings", True))
        act = g("hidden_activation") or g("hidden_act") or "gelu_pytorch_tanh"
        if act != "gelu_pytorch_tanh":
            raise RefError("hidden_activation %r: only gelu_pytorch_tanh is modelled" % act)
        self.query_pre_attn_scalar = float(g("query_pre_attn_scalar", 256))
        self.attn_softcap = g("attn_logit_softcapping", None if g3 else 50.0)
        self.final_softcap = g("final_logit_softcapping", None if g3 else 30.0)
        self.rope_theta = float(g("rope_theta", 1e6 if g3 else 10000.0))
        self.rope_local_theta = float(g("rope_local_base_freq", 10000.0)) if g3 else self.rope_theta
        rs = g("rope_scaling") or {}
        self.rope_type = rs.get("rope_type", rs.get("type", "default"))
        if self.rope_type not in ("default", "linear"):
            raise RefError("rope_scaling type %r is not modelled" % self.rope_type)
        self.rope_factor = float(rs.get("factor", 1.0)) if self.rope_type == "linear" else 1.0
        self.sliding_window = int(g("sliding_window", 4096))
        lt = g("layer_types")
        if lt is None:
            pattern = int(g("sliding_window_pattern", 6)) if g3 else 2
            lt = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(self.n_layers)]
        if len(lt) != self.n_layers:
            raise RefError("layer_types has %d entries for %d layers" % (len(lt), self.n_layers))
        self.layer_sliding = [t == "sliding_attention" for t in lt]


class Model:
    def __init__(self, model_dir, dtype=np.float64, quiet=False):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.dtype = dtype
        c = self.cfg
        self.tensors = llama_ref.read_model_tensors(model_dir)
        H, q, kv = c.hidden, c.n_heads * c.head_dim, c.n_kv * c.head_dim
        self.embed = self._get("model.embed_tokens.weight", (c.vocab, H))
        self.layers = []
        for l in range(c.n_layers):
            p = "model.layers.%d." % l
            L = {
                "in": self._get(p + "input_layernorm.weight", (H,)),
                "post_attn": self._get(p + "post_attention_layernorm.weight", (H,)),
                "pre_ffn": self._get(p + "pre_feedforward_layernorm.weight", (H,)),
                "post_ffn": self._get(p + "post_feedforward_layernorm.weight", (H,)),
                "q": self._get(p + "self_attn.q_proj.weight", (q, H)),
                "k": self._get(p + "self_attn.k_proj.weight", (kv, H)),
                "v": self._get(p + "self_attn.v_proj.weight", (kv, H)),
                "o": self._get(p + "self_attn.o_proj.weight", (H, q)),
                "gate": self._get(p + "mlp.gate_proj.weight", (c.inter, H)),
                "up": self._get(p + "mlp.up_proj.weight", (c.inter, H)),
                "down": self._get(p + "mlp.down_proj.weight", (H, c.inter)),
                "sliding": c.layer_sliding[l],
            }
            if c.arch == "gemma3":
                L["q_norm"] = self._get(p + "self_attn.q_norm.weight", (c.head_dim,))
                L["k_norm"] = self._get(p + "self_attn.k_norm.weight", (c.head_dim,))
            # Gemma-3: local layers use the local base unscaled; global ones rope_theta (+ linear scaling).
            if c.arch == "gemma3" and L["sliding"]:
                L["inv_freq"] = self._inv_freq(c.rope_local_theta, 1.0)
            else:
                L["inv_freq"] = self._inv_freq(c.rope_theta, c.rope_factor if c.arch == "gemma3" else 1.0)
            self.layers.append(L)
        self.norm = self._get("model.norm.weight", (H,))
        self.lm_head = self.embed if c.tie else self._get("lm_head.weight", (c.vocab, H))

    def _get(self, name, shape):
        if name not in self.tensors:
            raise RefError("missing tensor %s" % name)
        t = self.tensors[name]
        if tuple(t.shape) != tuple(shape):
            raise RefError("tensor %s has shape %s, expected %s" % (name, t.shape, tuple(shape)))
        return t.astype(self.dtype)

    def _inv_freq(self, base, factor):
        d = self.cfg.head_dim
        return 1.0 / (base ** (np.arange(0, d, 2, dtype=np.float64) / d)) / factor

    def _rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.dtype(self.cfg.eps)) * (1.0 + w)

    def _rope(self, x, pos, inv_freq):
        """x [n, heads, d], rotate_half pairing (i, i + d/2)."""
        d = x.shape[-1]
        freqs = np.outer(pos.astype(np.float64), inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos = np.cos(emb).astype(self.dtype)[:, None, :]
        sin = np.sin(emb).astype(self.dtype)[:, None, :]
        rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
        return x * cos + rot * sin

    def _attention(self, L, x, pos):
        c = self.cfg
        n, hd = x.shape[0], c.head_dim
        q = (x @ L["q"].T).reshape(n, c.n_heads, hd)
        k = (x @ L["k"].T).reshape(n, c.n_kv, hd)
        v = (x @ L["v"].T).reshape(n, c.n_kv, hd)
        if "q_norm" in L:
            q, k = self._rms(q, L["q_norm"]), self._rms(k, L["k_norm"])
        q, k = self._rope(q, pos, L["inv_freq"]), self._rope(k, pos, L["inv_freq"])
        allowed = pos[None, :] <= pos[:, None]
        if L["sliding"]:
            allowed &= pos[None, :] > pos[:, None] - c.sliding_window
        scale = self.dtype(c.query_pre_attn_scalar ** -0.5)
        group = c.n_heads // c.n_kv
        out = np.empty((n, c.n_heads, hd), dtype=self.dtype)
        for h in range(c.n_heads):
            s = (q[:, h] @ k[:, h // group].T) * scale
            if c.attn_softcap:
                cap = self.dtype(c.attn_softcap)
                s = np.tanh(s / cap) * cap
            s = np.where(allowed, s, -np.inf)
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, h] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, h // group]
        return out.reshape(n, -1) @ L["o"].T

    def _mlp(self, L, x):
        g = x @ L["gate"].T
        gelu = 0.5 * g * (1.0 + np.tanh(self.dtype(math.sqrt(2.0 / math.pi)) * (g + 0.044715 * g * g * g)))
        return (gelu * (x @ L["up"].T)) @ L["down"].T

    def _check(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= self.cfg.vocab:
            raise RefError("need a non-empty 1-D list of ids in [0, %d)" % self.cfg.vocab)
        return ids

    def hidden_states(self, ids):
        ids = self._check(ids)
        pos = np.arange(ids.size, dtype=np.int64)
        x = self.embed[ids] * self.dtype(math.sqrt(self.cfg.hidden))
        for L in self.layers:
            x = x + self._rms(self._attention(L, self._rms(x, L["in"]), pos), L["post_attn"])
            x = x + self._rms(self._mlp(L, self._rms(x, L["pre_ffn"])), L["post_ffn"])
        return self._rms(x, self.norm)

    def logits(self, ids):
        out = self.hidden_states(ids) @ self.lm_head.T
        if self.cfg.final_softcap:
            cap = self.dtype(self.cfg.final_softcap)
            out = np.tanh(out / cap) * cap
        return out


def self_test():
    """The sliding mask against its definition and the layer-type rules of both configs."""
    c2 = Config({"architectures": ["Gemma2ForCausalLM"], "hidden_size": 8, "intermediate_size": 8,
                 "num_hidden_layers": 4, "num_attention_heads": 2, "vocab_size": 4})
    assert c2.layer_sliding == [True, False, True, False], c2.layer_sliding
    assert c2.attn_softcap == 50.0 and c2.final_softcap == 30.0 and c2.sliding_window == 4096
    c3 = Config({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 8, "intermediate_size": 8,
                 "num_hidden_layers": 7, "num_attention_heads": 2, "vocab_size": 4})
    assert c3.layer_sliding == [True] * 5 + [False, True], c3.layer_sliding
    assert c3.attn_softcap is None and c3.rope_local_theta == 10000.0
    print("gemma_ref self-test: OK")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        self_test()
        sys.exit(0)
    sys.stderr.write("usage: gemma_ref.py --self-test (compare_score.py --arch gemma2|gemma3 drives the model)\n")
    sys.exit(2)
