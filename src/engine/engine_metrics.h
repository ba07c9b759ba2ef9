// EngineMetrics: the engine's counters and histograms as one snapshot
// (Engine::Metrics), rendered by the server as Prometheus text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepinfer {

// Fixed-bucket histogram (Prometheus "le" buckets, cumulative when rendered).
struct Histogram {
  std::vector<double> upper_bounds;  // ascending; +Inf implied
  std::vector<int64_t> counts;       // per bucket (not cumulative), size upper_bounds + 1
  double sum = 0.0;
  int64_t count = 0;
};

struct EngineMetrics {
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage_ratio = 0.0;  // blocks held by live requests / pool
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_in_use = 0;  // referenced by live requests
  // Per layer group (KvManager::GroupUsages): "all" for one table spanning
  // every layer; "full" / "swa" with window-bounded KV, counted in
  // single-layer blocks of the one shared pool (so each group's total is the
  // whole pool).
  struct KvGroup {
    std::string name;
    int64_t blocks_in_use = 0;
    int64_t blocks_total = 0;
  };
  std::vector<KvGroup> kv_groups;
  double prefix_cache_hit_ratio = 0.0;  // cached prompt tokens / prompt tokens, over all admitted
  // Prefix cache, in tokens, once per request at its first admission:
  // prompt tokens looked up, and those found cached (hits / queries is the
  // ratio above).
  int64_t prefix_cache_queries_total = 0;
  int64_t prefix_cache_hits_total = 0;
  // Window-bounded KV: tokens a prefix hit found cached for full attention but
  // recomputed because no windowed checkpoint covered them (bounded replay).
  int64_t swa_replayed_tokens_total = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t requests_finished_total = 0;
  int64_t num_preemptions_total = 0;
  int64_t steps_total = 0;
  // Async scheduling: steps planned while the previous step ran, and steps
  // planned with nothing in flight although a request was running (the
  // overlap lost; 0 in sync mode, which never plans ahead).
  int64_t steps_planned_ahead_total = 0;
  int64_t steps_planned_without_overlap_total = 0;
  double executor_idle_seconds_total = 0.0;  // time the runner waited between steps while work existed
  double executor_busy_seconds_total = 0.0;
  // Speculative decoding (all zero / empty when it is off).
  int64_t spec_num_drafts_total = 0;                // verifications: rows that verified >= 1 draft
  int64_t spec_draft_tokens_total = 0;              // drafts verified
  int64_t spec_accepted_tokens_total = 0;           // of which accepted
  std::vector<int64_t> spec_accepted_per_position;  // [depth]: accepted drafts at that depth
  std::vector<int64_t> spec_draft_length_counts;    // [k]: times the schedule chose k drafts for a request
  int64_t spec_paused_steps_total = 0;  // steps run without the drafter: speculation would not have paid
  // Calibration per depth: mean calibrated confidence of the drafts verified
  // there (predicted) and the share accepted (observed), both conditional on
  // the earlier drafts being accepted; NaN-free: 0 where nothing was verified.
  std::vector<double> spec_predicted_acceptance;
  std::vector<double> spec_observed_acceptance;
  Histogram time_to_first_token_seconds;
  Histogram time_per_output_token_seconds;
  // Per finished request (OutputProcessor): arrival -> finish (every
  // request); arrival -> first scheduled (every request that was scheduled);
  // first scheduled -> first token and first token -> last token (every
  // request that produced a token); its prompt and generated token counts.
  Histogram e2e_request_latency_seconds;
  Histogram request_queue_time_seconds;
  Histogram request_prefill_time_seconds;
  Histogram request_decode_time_seconds;
  Histogram request_inference_time_seconds;  // first scheduled -> last token: prefill + decode
  Histogram request_prompt_tokens;
  Histogram request_generation_tokens;
  // MoE models: tokens routed to each expert since load, [layer][expert]
  // (Model::ExpertLoad(); an empty row for a dense layer). Each token of a
  // MoE layer counts once for each of its top-k experts. Empty for dense models.
  std::vector<std::vector<int64_t>> expert_tokens_total;
};

}  // namespace deepinfer
