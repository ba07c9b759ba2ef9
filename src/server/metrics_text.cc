#include "server/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace deepinfer::server {
namespace {

// Prometheus floats: shortest round-trippable form, +Inf/-Inf/NaN spelled out.
std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Shorter form when it round-trips (e.g. 0.1 instead of 0.10000000000000001).
  for (int precision = 1; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void Sample(std::string& out, const char* name, const char* type, const char* help, double value) {
  Header(out, name, type, help);
  out += name;
  out += ' ';
  out += Num(value);
  out += '\n';
}

void HistogramText(std::string& out, const char* name, const char* help, const Histogram& h) {
  Header(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i <= h.upper_bounds.size(); ++i) {
    if (i < h.counts.size()) cumulative += h.counts[i];
    std::string le = i < h.upper_bounds.size() ? Num(h.upper_bounds[i]) : "+Inf";
    // The +Inf bucket equals _count by definition, whatever the per-bucket array holds.
    int64_t value = i < h.upper_bounds.size() ? cumulative : h.count;
    out += std::string(name) + "_bucket{le=\"" + le + "\"} " + std::to_string(value) + "\n";
  }
  out += std::string(name) + "_sum " + Num(h.sum) + "\n";
  out += std::string(name) + "_count " + std::to_string(h.count) + "\n";
}

// One series per (MoE layer, expert); nothing for dense models.
void ExpertTokens(std::string& out, const std::vector<std::vector<int64_t>>& load) {
  bool any = false;
  for (const auto& layer : load) any |= !layer.empty();
  if (!any) return;
  Header(out, "deepinfer_expert_tokens_total", "counter",
         "Tokens routed to each expert of each MoE layer (a token counts once per chosen expert).");
  for (size_t l = 0; l < load.size(); ++l) {
    for (size_t e = 0; e < load[l].size(); ++e) {
      out += "deepinfer_expert_tokens_total{layer=\"" + std::to_string(l) + "\",expert=\"" +
             std::to_string(e) + "\"} " + std::to_string(load[l][e]) + "\n";
    }
  }
}

// Speculative decoding, in vLLM's spec_decode names (docs/speculative.md).
void SpeculativeDecoding(std::string& out, const EngineMetrics& m) {
  Sample(out, "deepinfer_spec_decode_num_drafts_total", "counter",
         "Verifications: rows that verified drafts.", static_cast<double>(m.spec_num_drafts_total));
  Sample(out, "deepinfer_spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.",
         static_cast<double>(m.spec_draft_tokens_total));
  Sample(out, "deepinfer_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.",
         static_cast<double>(m.spec_accepted_tokens_total));
  Sample(out, "deepinfer_spec_decode_paused_steps_total", "counter",
         "Steps run with the drafter paused (speculation predicted not to pay).",
         static_cast<double>(m.spec_paused_steps_total));
  if (m.spec_accepted_per_position.empty()) return;  // speculation off
  auto per_position = [&](const char* name, const char* type, const char* help, auto value) {
    Header(out, name, type, help);
    for (size_t d = 0; d < m.spec_accepted_per_position.size(); ++d) {
      out += std::string(name) + "{position=\"" + std::to_string(d) + "\"} " + Num(value(d)) + "\n";
    }
  };
  per_position("deepinfer_spec_decode_num_accepted_tokens_per_pos_total", "counter",
               "Accepted drafts at each depth (0 = the first draft).",
               [&](size_t d) { return static_cast<double>(m.spec_accepted_per_position[d]); });
  per_position(
      "deepinfer_spec_decode_predicted_acceptance", "gauge",
      "Mean calibrated confidence of the drafts verified at each depth (given the earlier accepted).",
      [&](size_t d) {
        return d < m.spec_predicted_acceptance.size() ? m.spec_predicted_acceptance[d] : 0.0;
      });
  per_position(
      "deepinfer_spec_decode_observed_acceptance", "gauge",
      "Share of the drafts verified at each depth that were accepted (given the earlier accepted).",
      [&](size_t d) { return d < m.spec_observed_acceptance.size() ? m.spec_observed_acceptance[d] : 0.0; });
  Histogram lengths;
  for (size_t k = 0; k + 1 < m.spec_draft_length_counts.size(); ++k)
    lengths.upper_bounds.push_back(static_cast<double>(k));
  lengths.counts = m.spec_draft_length_counts;
  for (size_t k = 0; k < m.spec_draft_length_counts.size(); ++k) {
    lengths.count += m.spec_draft_length_counts[k];
    lengths.sum += static_cast<double>(k) * static_cast<double>(m.spec_draft_length_counts[k]);
  }
  HistogramText(out, "deepinfer_spec_decode_draft_length",
                "Drafts the verification schedule chose per request and step.", lengths);
}

}  // namespace

std::string RenderPrometheusMetrics(const EngineMetrics& m) {
  std::string out;
  out.reserve(4096);
  Sample(out, "deepinfer_num_requests_running", "gauge", "Requests in the running batch.",
         static_cast<double>(m.num_requests_running));
  Sample(out, "deepinfer_num_requests_waiting", "gauge", "Requests waiting for admission (incl. preempted).",
         static_cast<double>(m.num_requests_waiting));
  Sample(out, "deepinfer_kv_cache_usage_ratio", "gauge",
         "KV blocks referenced by live requests / pool (cached idle prefix blocks not counted).",
         m.kv_cache_usage_ratio);
  // A gauge: no "_total" suffix, which Prometheus reserves for counters.
  // Unlabeled: the whole pool; {group=...}: per layer group (one shared pool,
  // so every group's total is the pool; EngineMetrics::KvGroup).
  Sample(out, "deepinfer_kv_cache_num_blocks", "gauge", "KV blocks in the pool.",
         static_cast<double>(m.kv_blocks_total));
  for (const auto& g : m.kv_groups) {
    out += "deepinfer_kv_cache_num_blocks{group=\"" + g.name + "\"} " + std::to_string(g.blocks_total) + "\n";
  }
  Sample(out, "deepinfer_kv_cache_blocks_in_use", "gauge", "KV blocks referenced by live requests.",
         static_cast<double>(m.kv_blocks_in_use));
  for (const auto& g : m.kv_groups) {
    out += "deepinfer_kv_cache_blocks_in_use{group=\"" + g.name + "\"} " + std::to_string(g.blocks_in_use) +
           "\n";
  }
  Sample(out, "deepinfer_prefix_cache_hit_ratio", "gauge", "Cached prompt tokens / prompt tokens admitted.",
         m.prefix_cache_hit_ratio);
  Sample(out, "deepinfer_prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache (once per request, at its first admission).",
         static_cast<double>(m.prefix_cache_queries_total));
  Sample(out, "deepinfer_prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache (once per request, at its first admission).",
         static_cast<double>(m.prefix_cache_hits_total));
  Sample(out, "deepinfer_swa_replayed_tokens_total", "counter",
         "Cached tokens recomputed on prefix hits to rebuild sliding-window KV (bounded replay).",
         static_cast<double>(m.swa_replayed_tokens_total));
  Sample(out, "deepinfer_prompt_tokens_total", "counter", "Prompt tokens admitted.",
         static_cast<double>(m.prompt_tokens_total));
  Sample(out, "deepinfer_generation_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(m.generation_tokens_total));
  Sample(out, "deepinfer_requests_finished_total", "counter", "Requests finished (any reason).",
         static_cast<double>(m.requests_finished_total));
  Sample(out, "deepinfer_num_preemptions_total", "counter", "Preemptions (KV freed, recomputed later).",
         static_cast<double>(m.num_preemptions_total));
  Sample(out, "deepinfer_steps_total", "counter", "Engine steps run.", static_cast<double>(m.steps_total));
  Sample(out, "deepinfer_steps_planned_ahead_total", "counter",
         "Steps planned while the previous step ran (async scheduling).",
         static_cast<double>(m.steps_planned_ahead_total));
  Sample(out, "deepinfer_steps_planned_without_overlap_total", "counter",
         "Steps planned with nothing in flight although a request was running (async overlap lost).",
         static_cast<double>(m.steps_planned_without_overlap_total));
  Sample(out, "deepinfer_executor_idle_seconds_total", "counter",
         "Time the model runner waited between steps while work existed.", m.executor_idle_seconds_total);
  Sample(out, "deepinfer_executor_busy_seconds_total", "counter", "Time the model runner spent in steps.",
         m.executor_busy_seconds_total);
  SpeculativeDecoding(out, m);
  ExpertTokens(out, m.expert_tokens_total);
  HistogramText(out, "deepinfer_time_to_first_token_seconds", "Time from arrival to the first output token.",
                m.time_to_first_token_seconds);
  HistogramText(out, "deepinfer_time_per_output_token_seconds", "Time between output tokens of a request.",
                m.time_per_output_token_seconds);
  HistogramText(out, "deepinfer_e2e_request_latency_seconds",
                "Time from arrival to finish, per finished request.", m.e2e_request_latency_seconds);
  HistogramText(out, "deepinfer_request_queue_time_seconds",
                "Time from arrival to the first scheduled step, per finished request that was scheduled.",
                m.request_queue_time_seconds);
  HistogramText(
      out, "deepinfer_request_prefill_time_seconds",
      "Time from the first scheduled step to the first output token, per finished request with one.",
      m.request_prefill_time_seconds);
  HistogramText(out, "deepinfer_request_decode_time_seconds",
                "Time from the first to the last output token, per finished request with one.",
                m.request_decode_time_seconds);
  HistogramText(out, "deepinfer_request_inference_time_seconds",
                "Time from the first scheduled step to the last output token (prefill + decode).",
                m.request_inference_time_seconds);
  HistogramText(out, "deepinfer_request_prompt_tokens", "Prompt tokens per finished request.",
                m.request_prompt_tokens);
  HistogramText(out, "deepinfer_request_generation_tokens", "Generated tokens per finished request.",
                m.request_generation_tokens);
  return out;
}

}  // namespace deepinfer::server
