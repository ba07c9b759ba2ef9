#!/usr/bin/python3
"""Independent NumPy reference of the HF transformers forward pass of the mixture-of-experts members of
the Llama family: MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM.

Written from the published HF model definitions (modeling_mixtral.py, modeling_qwen2_moe.py,
modeling_qwen3_moe.py), not from deepinfer's C++. It reuses llama_ref.py's safetensors reader, RoPE
parameters and log_softmax only. Same interface as llama_ref.Model (cfg, logits(ids)), so
compare_score.py can drive it.

One decoder layer (all three):

    x = x + o_proj(attention(rope(q), rope(k), v))       # as Llama; Qwen2-MoE: q/k/v bias;
                                                         # Qwen3-MoE: per-head q/k RMSNorm before RoPE
    x = x + moe(rms2(x))   or a dense SwiGLU MLP (intermediate_size) on non-sparse layers

The sparse MoE block (per token):

    probs   = softmax(router_logits)            # router = gate.weight [num_experts, hidden], float
    w, idx  = topk(probs, k)                    # k = num_experts_per_tok
    Mixtral:     w /= sum(w)                    # always renormalized
    Qwen2/3-MoE: w /= sum(w) iff norm_topk_prob
    y = sum_j w_j * expert_idx_j(x),  expert(x) = down(silu(gate(x)) * up(x))
        (Mixtral names: w1 = gate, w3 = up, w2 = down; under block_sparse_moe.)
    Qwen2-MoE: y += sigmoid(shared_expert_gate(x)) * shared_expert(x)   (shared_expert_intermediate_size)

Which layers are sparse: Mixtral every layer. Qwen2/3-MoE: layer i is sparse iff i not in
mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0.
Sliding window: Mixtral every layer iff sliding_window is set; Qwen2/3-MoE: layer_types when given,
else layers >= max_window_layers when use_sliding_window.
Ties in topk are broken towards the lower expert id (stable sort); random weights make ties unlikely.
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

_ARCH_BY_CLASS = {
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
}

# transformers config-class defaults.
_DEFAULTS = {
    "mixtral": dict(num_experts=8, top_k=2),
    "qwen2_moe": dict(num_experts=60, top_k=4, moe_inter=1408, shared_inter=5632),
    "qwen3_moe": dict(num_experts=128, top_k=8, moe_inter=768, shared_inter=0),
}


class Config:
    def __init__(self, cfg):
        self.raw = cfg
        arch = None
        for a in cfg.get("architectures") or []:
            arch = _ARCH_BY_CLASS.get(a, arch)
        if arch is None:
            raise RefError("unsupported architecture %s" % cfg.get("architectures"))
        self.arch = arch
        d = _DEFAULTS[arch]

        def req(key):
            if cfg.get(key) is None:
                raise RefError("config.json lacks %s" % key)
            return cfg[key]

        self.hidden = int(req("hidden_size"))
        self.inter = int(req("intermediate_size"))
        self.n_layers = int(req("num_hidden_layers"))
        self.n_heads = int(req("num_attention_heads"))
        self.n_kv = int(cfg.get("num_key_value_heads") or self.n_heads)
        self.vocab = int(req("vocab_size"))
        self.eps = float(cfg.get("rms_norm_eps", 1e-6 if arch != "mixtral" else 1e-5))
        self.head_dim = int(cfg.get("head_dim") or self.hidden // self.n_heads)
        self.tie = bool(cfg.get("tie_word_embeddings", False))
        if cfg.get("hidden_act", "silu") != "silu":
            raise RefError("only silu is supported")
        self.qkv_bias = arch == "qwen2_moe" or (arch == "qwen3_moe" and bool(cfg.get("attention_bias", False)))
        self.o_bias = arch == "qwen3_moe" and bool(cfg.get("attention_bias", False))
        self.qk_norm = arch == "qwen3_moe"
        self.rope_type, self.rope_theta, self.rope = llama_ref._rope_params(cfg)
        if self.rope_type != "default":
            raise RefError("rope type %s not supported here" % self.rope_type)

        if arch == "mixtral":
            self.n_experts = int(cfg.get("num_local_experts") or d["num_experts"])
            self.top_k = int(cfg.get("num_experts_per_tok") or d["top_k"])
            self.moe_inter = self.inter
            self.norm_topk = True
            self.shared_inter = 0
            self.sparse = [True] * self.n_layers
        else:
            self.n_experts = int(cfg.get("num_experts", d["num_experts"]))
            self.top_k = int(cfg.get("num_experts_per_tok", d["top_k"]))
            self.moe_inter = int(cfg.get("moe_intermediate_size", d["moe_inter"]))
            self.norm_topk = bool(cfg.get("norm_topk_prob", False))
            self.shared_inter = int(cfg.get("shared_expert_intermediate_size", d["shared_inter"])) \
                if arch == "qwen2_moe" else 0
            step = int(cfg.get("decoder_sparse_step", 1))
            only = set(cfg.get("mlp_only_layers") or [])
            self.sparse = [(i not in only) and self.n_experts > 0 and (i + 1) % step == 0
                           for i in range(self.n_layers)]

        # Sliding windows.
        n = self.n_layers
        if arch == "mixtral":
            w = cfg.get("sliding_window")
            self.sliding_window = int(w) if w else None
            self.layer_sliding = [self.sliding_window is not None] * n
        else:
            w = cfg.get("sliding_window") if cfg.get("use_sliding_window", False) else None
            self.sliding_window = int(w) if w else None
            lt = cfg.get("layer_types")
            if lt is None:
                mwl = int(cfg.get("max_window_layers", 28))
                lt = ["sliding_attention" if (self.sliding_window and i >= mwl) else "full_attention"
                      for i in range(n)]
            self.layer_sliding = [t == "sliding_attention" and self.sliding_window is not None for t in lt]


class Model:
    def __init__(self, model_dir, dtype=np.float64, quiet=False):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.dtype = dtype
        c = self.cfg
        tensors = llama_ref.read_model_tensors(model_dir)
        used = set()

        def get(name, shape):
            if name not in tensors:
                raise RefError("missing tensor %s" % name)
            t = tensors[name]
            if tuple(t.shape) != tuple(shape):
                raise RefError("tensor %s has shape %s, expected %s" % (name, t.shape, tuple(shape)))
            used.add(name)
            return t.astype(dtype)

        H, D = c.hidden, c.head_dim
        qd, kvd = c.n_heads * D, c.n_kv * D
        self.embed = get("model.embed_tokens.weight", (c.vocab, H))
        self.layers = []
        for i in range(c.n_layers):
            p = "model.layers.%d." % i
            L = {
                "in_norm": get(p + "input_layernorm.weight", (H,)),
                "post_norm": get(p + "post_attention_layernorm.weight", (H,)),
                "q": get(p + "self_attn.q_proj.weight", (qd, H)),
                "k": get(p + "self_attn.k_proj.weight", (kvd, H)),
                "v": get(p + "self_attn.v_proj.weight", (kvd, H)),
                "o": get(p + "self_attn.o_proj.weight", (H, qd)),
                "sliding": c.layer_sliding[i],
            }
            if c.qkv_bias:
                for n_, dim in (("q", qd), ("k", kvd), ("v", kvd)):
                    L[n_ + "_b"] = get(p + "self_attn.%s_proj.bias" % n_, (dim,))
            if c.o_bias:
                L["o_b"] = get(p + "self_attn.o_proj.bias", (H,))
            if c.qk_norm:
                L["q_norm"] = get(p + "self_attn.q_norm.weight", (D,))
                L["k_norm"] = get(p + "self_attn.k_norm.weight", (D,))
            if c.sparse[i]:
                mp = p + ("block_sparse_moe." if c.arch == "mixtral" else "mlp.")
                names = ("w1", "w3", "w2") if c.arch == "mixtral" else ("gate_proj", "up_proj", "down_proj")
                F = c.moe_inter
                L["router"] = get(mp + "gate.weight", (c.n_experts, H))
                L["experts"] = [(get(mp + "experts.%d.%s.weight" % (e, names[0]), (F, H)),
                                 get(mp + "experts.%d.%s.weight" % (e, names[1]), (F, H)),
                                 get(mp + "experts.%d.%s.weight" % (e, names[2]), (H, F)))
                                for e in range(c.n_experts)]
                if c.shared_inter > 0:
                    S = c.shared_inter
                    L["shared"] = (get(mp + "shared_expert.gate_proj.weight", (S, H)),
                                   get(mp + "shared_expert.up_proj.weight", (S, H)),
                                   get(mp + "shared_expert.down_proj.weight", (H, S)))
                    L["shared_gate"] = get(mp + "shared_expert_gate.weight", (1, H))
            else:
                I = c.inter
                L["dense"] = (get(p + "mlp.gate_proj.weight", (I, H)), get(p + "mlp.up_proj.weight", (I, H)),
                              get(p + "mlp.down_proj.weight", (H, I)))
            self.layers.append(L)
        self.norm = get("model.norm.weight", (H,))
        self.lm_head = self.embed if c.tie else get("lm_head.weight", (c.vocab, H))
        unused = sorted(set(tensors) - used - {"lm_head.weight"})
        if unused and not quiet:
            sys.stderr.write("moe_ref.py: note: %d tensors unused (e.g. %s)\n" % (len(unused), unused[0]))
        self.inv_freq = 1.0 / (c.rope_theta ** (np.arange(0, D, 2, dtype=np.float64) / D))
        self.expert_load = [np.zeros(c.n_experts, dtype=np.int64) for _ in range(c.n_layers)]

    def _rms(self, x, w):
        return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.dtype(self.cfg.eps)))

    def _rope(self, x, pos):
        freqs = np.outer(pos.astype(np.float64), self.inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos = np.cos(emb).astype(self.dtype)[:, None, :]
        sin = np.sin(emb).astype(self.dtype)[:, None, :]
        half = x.shape[-1] // 2
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin

    def _attention(self, L, x, pos):
        c = self.cfg
        n, D = x.shape[0], c.head_dim
        q, k, v = x @ L["q"].T, x @ L["k"].T, x @ L["v"].T
        if c.qkv_bias:
            q, k, v = q + L["q_b"], k + L["k_b"], v + L["v_b"]
        q, k, v = q.reshape(n, c.n_heads, D), k.reshape(n, c.n_kv, D), v.reshape(n, c.n_kv, D)
        if c.qk_norm:
            q, k = self._rms(q, L["q_norm"]), self._rms(k, L["k_norm"])
        q, k = self._rope(q, pos), self._rope(k, pos)
        allowed = pos[None, :] <= pos[:, None]
        if L["sliding"]:
            allowed &= pos[None, :] > pos[:, None] - c.sliding_window
        group = c.n_heads // c.n_kv
        out = np.empty((n, c.n_heads, D), dtype=self.dtype)
        for h in range(c.n_heads):
            s = (q[:, h] @ k[:, h // group].T) * self.dtype(1.0 / math.sqrt(D))
            s = np.where(allowed, s, -np.inf)
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, h] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, h // group]
        y = out.reshape(n, -1) @ L["o"].T
        return y + L["o_b"] if c.o_bias else y

    @staticmethod
    def _swiglu(w, x):
        g = x @ w[0].T
        return ((g / (1.0 + np.exp(-g))) * (x @ w[1].T)) @ w[2].T

    def _moe(self, li, L, x):
        c = self.cfg
        logits = (x @ L["router"].T).astype(np.float64)
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        y = np.zeros_like(x)
        for t in range(x.shape[0]):
            idx = np.argsort(-probs[t], kind="stable")[:c.top_k]
            w = probs[t, idx]
            if c.norm_topk:
                w = w / w.sum()
            for e, we in zip(idx, w):
                self.expert_load[li][e] += 1
                y[t] += self.dtype(we) * self._swiglu(L["experts"][e], x[t:t + 1])[0]
        if "shared" in L:
            gate = 1.0 / (1.0 + np.exp(-(x @ L["shared_gate"].T)))
            y = y + gate * self._swiglu(L["shared"], x)
        return y

    def hidden_states(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= self.cfg.vocab:
            raise RefError("need a non-empty 1-D list of ids in [0, %d)" % self.cfg.vocab)
        pos = np.arange(ids.size, dtype=np.int64)
        x = self.embed[ids]
        for li, L in enumerate(self.layers):
            x = x + self._attention(L, self._rms(x, L["in_norm"]), pos)
            h = self._rms(x, L["post_norm"])
            x = x + (self._moe(li, L, h) if "router" in L else self._swiglu(L["dense"], h))
        return self._rms(x, self.norm)

    def logits(self, ids):
        return self.hidden_states(ids) @ self.lm_head.T


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="MoE NumPy reference: print log-probs of a token list")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True)
    a = ap.parse_args()
    ids = [int(t) for t in a.tokens.split(",")]
    lp = log_softmax(Model(a.model).logits(ids))
    for i in range(len(ids) - 1):
        print(json.dumps({"pos": i, "token": ids[i + 1], "logprob": float(lp[i][ids[i + 1]])}))
