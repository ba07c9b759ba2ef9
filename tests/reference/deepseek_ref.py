#!/usr/bin/python3
"""Independent NumPy reference of DeepseekV2ForCausalLM / DeepseekV3ForCausalLM (HF transformers
modeling_deepseek_v2.py / modeling_deepseek_v3.py and the DeepSeek-V2/V3 repositories' modeling_deepseek.py),
written from those definitions, not from deepinfer's C++. Reuses llama_ref.py's safetensors reader and
log_softmax only. Same interface as llama_ref.Model (cfg, logits(ids)) for compare_score.py, plus mtp_logits().

Decoder layer: x += o_proj(MLA(rms(x))); x += FFN(rms(x)), FFN dense (intermediate_size) for layers
< first_k_dense_replace (or l % moe_layer_freq != 0), else MoE.

MLA, naive (expanded) form, exactly as HF computes it:
    q = q_proj(x)                       if q_lora_rank is null
      = q_b_proj(rms(q_a_proj(x)))      otherwise;    q -> [n, H, nope + rope] = [q_nope | q_pe]
    [c, k_pe] = kv_a_proj_with_mqa(x);   kv = kv_b_proj(rms(c)) -> [n, H, nope + v] = [k_nope | v]
    RoPE (q_pe, k_pe): HF first de-interleaves the last dim (view(d/2, 2).transpose -> evens then odds),
        then rotate_half with cos/sin of cat(freqs, freqs) times _mscale.
    scores = [q_nope|q_pe] . [k_nope|k_pe] * softmax_scale, causal; out = softmax . v
    softmax_scale = (nope + rope)^-0.5, times yarn_get_mscale(factor, mscale_all_dim)^2 when
    rope_scaling has mscale_all_dim.
YaRN (rope_scaling type "yarn"): freq_extra = base^(-2i/d), freq_inter = freq_extra / factor,
    [low, high] = clamp(floor/ceil of d*ln(orig_max/(beta*2*pi))/(2 ln base)) for beta_fast / beta_slow,
    mask = 1 - clamp((i - low)/(high - low), 0, 1); inv_freq = freq_inter*(1-mask) + freq_extra*mask;
    _mscale = yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim),
    yarn_get_mscale(s, m) = 1 if s <= 1 else 0.1*m*ln(s) + 1.

MoE gate (float):
  V2 (scoring softmax): scores = softmax(logits);
     greedy: topk(scores, k); group_limited_greedy: group score = max of the group, keep topk_group groups,
     others' scores masked to 0 (all kept scores are > 0), then topk.
     if k > 1 and norm_topk_prob: w /= sum(w) + 1e-20 else: w *= routed_scaling_factor
  V3 (noaux_tc, sigmoid): scores = sigmoid(logits); choice = scores + e_score_correction_bias;
     group score = sum of the group's top-2 choice values; keep topk_group groups; the others are masked to
     -inf (as DeepSeek's own inference code and vLLM do; HF's 0.0 fill differs only when a kept choice is
     negative); idx = topk(choice, k); w = scores[idx]; if norm_topk_prob: w /= sum(w) + 1e-20;
     w *= routed_scaling_factor.
  y = sum_j w_j * expert_j(x) + shared_experts(x)   (shared: one SwiGLU of n_shared_experts * moe_inter)
  Ties in topk go to the lower expert id (stable sort).

Sliding windows: HF DeepSeek has none; deepinfer's hybrid-SWA variant marks layers with
layer_types == "sliding_attention" (window sliding_window: key j visible iff i - W < j <= i), honoured here.

MTP (V3, num_nextn_predict_layers, layer index L = num_hidden_layers): for position t with h_t = the base
model's final normed hidden state and x_{t+1} the next token,
    z = eh_proj([enorm(embed(x_{t+1})); hnorm(h_t)]); m = DecoderLayer_L(z) at position t (its own causal
    attention over the MTP inputs); logits = lm_head(shared_head.norm(m)).
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

_ARCH_BY_CLASS = {"DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3"}


def yarn_get_mscale(scale, mscale):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


class Config:
    def __init__(self, cfg):
        self.raw = cfg
        arch = None
        for a in cfg.get("architectures") or []:
            arch = _ARCH_BY_CLASS.get(a, arch)
        if arch is None:
            raise RefError("unsupported architecture %s" % cfg.get("architectures"))
        self.arch = arch
        v3 = arch == "deepseek_v3"
        g = cfg.get
        self.hidden = int(g("hidden_size"))
        self.inter = int(g("intermediate_size"))
        self.n_layers = int(g("num_hidden_layers"))
        self.n_heads = int(g("num_attention_heads"))
        self.n_kv = self.n_heads
        self.vocab = int(g("vocab_size"))
        self.eps = float(g("rms_norm_eps", 1e-6))
        self.tie = bool(g("tie_word_embeddings", False))
        self.q_lora = g("q_lora_rank", 1536)
        self.kv_lora = int(g("kv_lora_rank", 512))
        self.nope = int(g("qk_nope_head_dim", 128))
        self.rope_dim = int(g("qk_rope_head_dim", 64))
        self.v_dim = int(g("v_head_dim", 128))
        self.head_dim = self.nope + self.rope_dim
        self.rope_theta = float(g("rope_theta", 10000.0))
        self.rope_scaling = g("rope_scaling") or {}
        self.rope_type = self.rope_scaling.get("type", self.rope_scaling.get("rope_type", "default"))
        self.n_experts = int(g("n_routed_experts") or (256 if v3 else 0))
        self.top_k = int(g("num_experts_per_tok") or (8 if v3 else 0))
        self.moe_inter = int(g("moe_intermediate_size", 2048 if v3 else 1407))
        self.n_shared = int(g("n_shared_experts") or (1 if v3 else 0))
        self.rsf = float(g("routed_scaling_factor", 2.5 if v3 else 1.0))
        self.topk_method = g("topk_method", "noaux_tc" if v3 else "greedy")
        self.scoring = g("scoring_func", "sigmoid" if v3 else "softmax")
        self.n_group = int(g("n_group") or 1)
        self.topk_group = int(g("topk_group") or self.n_group)
        self.norm_topk = bool(g("norm_topk_prob", v3))
        first = int(g("first_k_dense_replace", 3 if v3 else 0))
        freq = int(g("moe_layer_freq", 1))
        self.sparse = [self.n_experts > 0 and l >= first and l % freq == 0 for l in range(self.n_layers)]
        self.mtp_layers = int(g("num_nextn_predict_layers") or 0)
        w = g("sliding_window")
        lt = g("layer_types")
        self.sliding_window = int(w) if (w and lt) else None
        self.layer_sliding = [bool(lt) and lt[i] == "sliding_attention" for i in range(self.n_layers)]


class Model:
    def __init__(self, model_dir, dtype=np.float64, quiet=False):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.dtype = dtype
        c = self.cfg
        self.tensors = llama_ref.read_model_tensors(model_dir)
        H = c.hidden
        self.embed = self._get("model.embed_tokens.weight", (c.vocab, H))
        self.layers = [self._layer(l, c.sparse[l] if l < c.n_layers else c.n_experts > 0, c.layer_sliding[l]
                                   if l < c.n_layers else False) for l in range(c.n_layers)]
        self.norm = self._get("model.norm.weight", (H,))
        self.lm_head = self.embed if c.tie else self._get("lm_head.weight", (c.vocab, H))
        self._init_rope()

    def _get(self, name, shape):
        if name not in self.tensors:
            raise RefError("missing tensor %s" % name)
        t = self.tensors[name]
        if tuple(t.shape) != tuple(shape):
            raise RefError("tensor %s has shape %s, expected %s" % (name, t.shape, tuple(shape)))
        return t.astype(self.dtype)

    def _layer(self, l, sparse, sliding):
        c, H = self.cfg, self.cfg.hidden
        p = "model.layers.%d." % l
        a = p + "self_attn."
        qk = c.nope + c.rope_dim
        L = {"in_norm": self._get(p + "input_layernorm.weight", (H,)),
             "post_norm": self._get(p + "post_attention_layernorm.weight", (H,)),
             "kv_a": self._get(a + "kv_a_proj_with_mqa.weight", (c.kv_lora + c.rope_dim, H)),
             "kv_a_norm": self._get(a + "kv_a_layernorm.weight", (c.kv_lora,)),
             "kv_b": self._get(a + "kv_b_proj.weight", (c.n_heads * (c.nope + c.v_dim), c.kv_lora)),
             "o": self._get(a + "o_proj.weight", (H, c.n_heads * c.v_dim)),
             "sliding": sliding}
        if c.q_lora:
            L["q_a"] = self._get(a + "q_a_proj.weight", (c.q_lora, H))
            L["q_a_norm"] = self._get(a + "q_a_layernorm.weight", (c.q_lora,))
            L["q_b"] = self._get(a + "q_b_proj.weight", (c.n_heads * qk, c.q_lora))
        else:
            L["q"] = self._get(a + "q_proj.weight", (c.n_heads * qk, H))
        m = p + "mlp."
        if sparse:
            F = c.moe_inter
            L["router"] = self._get(m + "gate.weight", (c.n_experts, H))
            if c.topk_method == "noaux_tc":
                L["bias"] = self._get(m + "gate.e_score_correction_bias", (c.n_experts,))
            L["experts"] = [tuple(self._get(m + "experts.%d.%s.weight" % (e, n), s) for n, s in
                                  (("gate_proj", (F, H)), ("up_proj", (F, H)), ("down_proj", (H, F))))
                            for e in range(c.n_experts)]
            if c.n_shared:
                S = F * c.n_shared
                L["shared"] = tuple(self._get(m + "shared_experts.%s.weight" % n, s) for n, s in
                                    (("gate_proj", (S, H)), ("up_proj", (S, H)), ("down_proj", (H, S))))
        else:
            I = c.inter
            L["dense"] = tuple(self._get(m + "%s.weight" % n, s) for n, s in
                               (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))))
        return L

    def _init_rope(self):
        c = self.cfg
        d, base = c.rope_dim, c.rope_theta
        inv = 1.0 / (base ** (np.arange(0, d, 2, dtype=np.float64) / d))
        self.cos_sin_scale = 1.0
        self.softmax_scale = (c.nope + c.rope_dim) ** -0.5
        rs = c.rope_scaling
        if c.rope_type == "yarn":
            f = float(rs["factor"])
            orig = float(rs.get("original_max_position_embeddings", 4096))
            bf, bs = float(rs.get("beta_fast", 32)), float(rs.get("beta_slow", 1))
            ms, msa = float(rs.get("mscale", 1)), float(rs.get("mscale_all_dim", 0))

            def corr(rot):
                return (d * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

            low, high = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), d - 1)
            if low == high:
                high += 0.001
            ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0, 1)
            mask = 1.0 - ramp
            inv = (inv / f) * (1 - mask) + inv * mask
            self.cos_sin_scale = yarn_get_mscale(f, ms) / yarn_get_mscale(f, msa)
            if msa:
                self.softmax_scale *= yarn_get_mscale(f, msa) ** 2
        elif c.rope_type not in ("default", None):
            raise RefError("rope type %s not supported" % c.rope_type)
        self.inv_freq = inv

    def _rms(self, x, w):
        return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.dtype(self.cfg.eps)))

    def _rope(self, x, pos):
        """x [n, heads, d]: de-interleave (evens then odds), then rotate_half, as HF DeepSeek does."""
        n, h, d = x.shape
        x = x.reshape(n, h, d // 2, 2).transpose(0, 1, 3, 2).reshape(n, h, d)
        freqs = np.outer(pos.astype(np.float64), self.inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos = (np.cos(emb) * self.cos_sin_scale).astype(self.dtype)[:, None, :]
        sin = (np.sin(emb) * self.cos_sin_scale).astype(self.dtype)[:, None, :]
        rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
        return x * cos + rot * sin

    def _attention(self, L, x, pos):
        c = self.cfg
        n, Hn = x.shape[0], c.n_heads
        q = (self._rms(x @ L["q_a"].T, L["q_a_norm"]) @ L["q_b"].T) if c.q_lora else x @ L["q"].T
        q = q.reshape(n, Hn, c.nope + c.rope_dim)
        q_nope, q_pe = q[..., :c.nope], q[..., c.nope:]
        ckv = x @ L["kv_a"].T
        comp, k_pe = ckv[:, :c.kv_lora], ckv[:, c.kv_lora:].reshape(n, 1, c.rope_dim)
        kv = (self._rms(comp, L["kv_a_norm"]) @ L["kv_b"].T).reshape(n, Hn, c.nope + c.v_dim)
        k_nope, v = kv[..., :c.nope], kv[..., c.nope:]
        q_pe, k_pe = self._rope(q_pe, pos), self._rope(k_pe, pos)
        qf = np.concatenate([q_nope, q_pe], axis=-1)
        kf = np.concatenate([k_nope, np.broadcast_to(k_pe, (n, Hn, c.rope_dim))], axis=-1)
        allowed = pos[None, :] <= pos[:, None]
        if L["sliding"]:
            allowed &= pos[None, :] > pos[:, None] - c.sliding_window
        out = np.empty((n, Hn, c.v_dim), dtype=self.dtype)
        for h in range(Hn):
            s = (qf[:, h] @ kf[:, h].T) * self.dtype(self.softmax_scale)
            s = np.where(allowed, s, -np.inf)
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, h] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, h]
        return out.reshape(n, -1) @ L["o"].T

    @staticmethod
    def _swiglu(w, x):
        g = x @ w[0].T
        return ((g / (1.0 + np.exp(-g))) * (x @ w[1].T)) @ w[2].T

    def _route(self, logits, bias):
        c = self.cfg
        E, k = c.n_experts, c.top_k
        if c.scoring == "sigmoid":
            scores = 1.0 / (1.0 + np.exp(-logits))
        else:
            scores = np.exp(logits - logits.max())
            scores /= scores.sum()
        choice = scores + bias if bias is not None else scores.copy()
        if c.topk_method in ("group_limited_greedy", "noaux_tc") and c.n_group > 1:
            per = E // c.n_group
            grouped = choice.reshape(c.n_group, per)
            if c.topk_method == "noaux_tc":
                gs = np.sort(grouped, axis=-1)[:, ::-1][:, :2].sum(axis=-1)
            else:
                gs = grouped.max(axis=-1)
            keep = np.argsort(-gs, kind="stable")[:c.topk_group]
            mask = np.zeros(c.n_group, dtype=bool)
            mask[keep] = True
            choice = np.where(np.repeat(mask, per), choice, -np.inf)
        idx = np.argsort(-choice, kind="stable")[:k]
        w = scores[idx]
        if c.topk_method == "noaux_tc":  # V3
            if c.norm_topk:
                w = w / (w.sum() + 1e-20)
            w = w * c.rsf
        elif k > 1 and c.norm_topk:
            w = w / (w.sum() + 1e-20)
        else:
            w = w * c.rsf
        return idx, w

    def _moe(self, L, x):
        logits = (x @ L["router"].T).astype(np.float64)
        bias = L["bias"].astype(np.float64) if "bias" in L else None
        y = np.zeros_like(x)
        for t in range(x.shape[0]):
            idx, w = self._route(logits[t], bias)
            for e, we in zip(idx, w):
                y[t] += self.dtype(we) * self._swiglu(L["experts"][e], x[t:t + 1])[0]
        if "shared" in L:
            y = y + self._swiglu(L["shared"], x)
        return y

    def _block(self, L, x, pos):
        x = x + self._attention(L, self._rms(x, L["in_norm"]), pos)
        h = self._rms(x, L["post_norm"])
        return x + (self._moe(L, h) if "router" in L else self._swiglu(L["dense"], h))

    def _check(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= self.cfg.vocab:
            raise RefError("need a non-empty 1-D list of ids in [0, %d)" % self.cfg.vocab)
        return ids

    def hidden_states(self, ids):
        ids = self._check(ids)
        pos = np.arange(ids.size, dtype=np.int64)
        x = self.embed[ids]
        for L in self.layers:
            x = self._block(L, x, pos)
        return self._rms(x, self.norm)

    def logits(self, ids):
        return self.hidden_states(ids) @ self.lm_head.T

    def mtp_logits(self, hidden, next_ids, index=0):
        """MTP layer `index` over positions 0..n-1 with inputs (hidden[s], next_ids[s]): logits [n, vocab]
        and the normed outputs g [n, hidden]."""
        c, H = self.cfg, self.cfg.hidden
        l = c.n_layers + index
        p = "model.layers.%d." % l
        L = self._layer(l, c.n_experts > 0, False)
        enorm = self._get(p + "enorm.weight", (H,))
        hnorm = self._get(p + "hnorm.weight", (H,))
        eh = self._get(p + "eh_proj.weight", (H, 2 * H))
        shn = self._get(p + "shared_head.norm.weight", (H,))
        ids = self._check(next_ids)
        z = np.concatenate([self._rms(self.embed[ids], enorm), self._rms(np.asarray(hidden, self.dtype), hnorm)],
                           axis=-1) @ eh.T
        m = self._block(L, z, np.arange(ids.size, dtype=np.int64))
        g = self._rms(m, shn)
        return g @ self.lm_head.T, g


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="DeepSeek NumPy reference: log-probs, or MTP logits")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--mtp", action="store_true", help="print the depth-1 MTP logits rows (JSON lists)")
    a = ap.parse_args()
    ids = [int(t) for t in a.tokens.split(",")]
    m = Model(a.model)
    if a.mtp:
        h = m.hidden_states(ids[:-1])
        lg, _ = m.mtp_logits(h, ids[1:])
        for row in lg:
            print(json.dumps([float(v) for v in row]))
    else:
        lp = log_softmax(m.logits(ids))
        for i in range(len(ids) - 1):
            print(json.dumps({"pos": i, "token": ids[i + 1], "logprob": float(lp[i][ids[i + 1]])}))
