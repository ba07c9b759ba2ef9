#include "engine/engine.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <random>
#include <string>

#include "core/check.h"
#include "core/log.h"
#include "engine/engine_impl.h"
#include "engine/kv_pool_size.h"
#include "engine/latency_histograms.h"
#include "model/mtp.h"
#include "runner/draft_model_drafter.h"
#include "runner/mtp_drafter.h"
#include "spec/ngram_drafter.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

Status EngineConfig::Validate() const {
  DI_RETURN_IF_ERROR(scheduler.Validate());
  if (block_size < 1 || block_size > 1024) return InvalidArgument("--block-size must be in [1, 1024]");
  if (kv_cache_memory_bytes < 0) return InvalidArgument("--kv-cache-memory must be >= 0");
  if (!(kv_cache_memory_fraction > 0.0 && kv_cache_memory_fraction <= 1.0)) {
    return InvalidArgument("kv_cache_memory_fraction must be in (0, 1]");
  }
  if (max_waiting_requests < 1) return InvalidArgument("max_waiting_requests must be >= 1");
  if (!speculative.method.empty() && speculative.method != "ngram" && speculative.method != "mtp" &&
      speculative.method != "draft") {
    return InvalidArgument("--speculative-method must be ngram, mtp or draft (got '" + speculative.method +
                           "')");
  }
  if ((speculative.method == "draft") != !speculative.draft_model.empty()) {
    return InvalidArgument("--speculative-method draft and --draft-model PATH go together");
  }
  if (speculative.rejection_sampling && speculative.method != "draft") {
    return InvalidArgument("--spec-sampling rejection needs --speculative-method draft");
  }
  if (speculative.method.empty() != (scheduler.max_num_speculative_tokens == 0)) {
    return InvalidArgument("--speculative-method and --num-speculative-tokens K (K >= 1) go together");
  }
  return Status::Ok();
}

namespace {
// EngineConfig::swa_replay_tokens, 0 resolved from DEEPINFER_SWA_REPLAY_TOKENS
// (a positive integer) or the default 140.
StatusOr<int64_t> ResolveSwaReplayTokens(int64_t configured) {
  if (configured < 0) return InvalidArgument("swa_replay_tokens must be >= 0");
  if (configured > 0) return configured;
  const char* env = std::getenv("DEEPINFER_SWA_REPLAY_TOKENS");
  if (env == nullptr || *env == '\0') return int64_t{140};
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > (int64_t{1} << 40)) {
    return InvalidArgument(std::string("DEEPINFER_SWA_REPLAY_TOKENS=") + env +
                           ": expected a positive integer");
  }
  return static_cast<int64_t>(v);
}

// The MTP layer's own KV pool: one layer beside the target's num_layers, as
// many tokens as the target's pool plus, per running request, a partial
// block and the chained drafts (their context may start mid-block).
std::unique_ptr<Drafter> MakeMtpDrafter(std::unique_ptr<MtpDraft> draft, const EngineConfig& c,
                                        int32_t num_blocks) {
  const int64_t k = c.scheduler.max_num_speculative_tokens;
  const int64_t per_request = (k + c.block_size - 1) / c.block_size + 1;
  return std::make_unique<MtpDrafter>(std::move(draft), num_blocks + c.scheduler.max_num_seqs * per_request,
                                      c.block_size);
}

// A token's bytes for a one-line message: control bytes as \xNN.
std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char ch : bytes) {
    if (ch < 0x20 || ch == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

// The draft model for --speculative-method draft: loaded with the target's
// thread count; its vocabulary must be the target's (same size and, where
// both checkpoints have tokenizers, the same token for every id).
StatusOr<std::unique_ptr<Drafter>> MakeDraftModelDrafter(const LoadedModel& target, const EngineConfig& c,
                                                         int32_t num_blocks) {
  const std::string& path = c.speculative.draft_model;
  LoadOptions options;
  options.num_threads = target.num_threads;
  auto draft = LoadModel(path, options);
  if (!draft.ok()) return InvalidArgument("--draft-model " + path + ": " + draft.status().message());
  const int64_t vocab = target.model->config().vocab_size;
  const int64_t draft_vocab = draft->model->config().vocab_size;
  if (draft_vocab != vocab) {
    return InvalidArgument("--draft-model " + path + ": its vocabulary has " + std::to_string(draft_vocab) +
                           " tokens, the model's " + std::to_string(vocab) + "; a draft model must share it");
  }
  if (target.tokenizer != nullptr && draft->tokenizer != nullptr) {
    const Tokenizer& a = *target.tokenizer;
    const Tokenizer& b = *draft->tokenizer;
    for (int32_t id = 0; id < std::max(a.vocab_size(), b.vocab_size()); ++id) {
      if (a.TokenBytes(id) != b.TokenBytes(id)) {
        return InvalidArgument("--draft-model " + path + ": token " + std::to_string(id) + " is '" +
                               Printable(b.TokenBytes(id)) + "' there and '" + Printable(a.TokenBytes(id)) +
                               "' in the model; a draft model must share its vocabulary");
      }
    }
  }
  const int64_t k = c.scheduler.max_num_speculative_tokens;
  const int64_t per_request = (k + c.block_size - 1) / c.block_size + 1;
  const auto sampling = c.speculative.rejection_sampling ? DraftModelDrafter::Sampling::kRejection
                                                         : DraftModelDrafter::Sampling::kCoupled;
  const ModelConfig& dc = draft->model->config();
  DI_LOG_INFO("speculative: draft model %s (%s, %lld layers, hidden %lld, %s drafts for sampled requests)",
              path.c_str(), dc.arch.c_str(), static_cast<long long>(dc.num_layers),
              static_cast<long long>(dc.hidden_size),
              c.speculative.rejection_sampling ? "rejection" : "identical");
  return std::unique_ptr<Drafter>(std::make_unique<DraftModelDrafter>(
      std::move(draft->model), num_blocks + c.scheduler.max_num_seqs * per_request, c.block_size, sampling));
}
}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Create(LoadedModel model, const EngineConfig& config) {
  if (model.model == nullptr) return InvalidArgument("Engine::Create: no model");
  EngineConfig effective = config;
  // Positions beyond the model's context have no rotary meaning.
  effective.scheduler.max_model_len =
      std::min(effective.scheduler.max_model_len, model.model->config().max_position);
  DI_RETURN_IF_ERROR(effective.Validate());
  DI_ASSIGN_OR_RETURN(effective.swa_replay_tokens, ResolveSwaReplayTokens(effective.swa_replay_tokens));
  const DType kv_dtype = ResolveKvCacheDType(effective.kv_cache_dtype);
  DI_RETURN_IF_ERROR(KvCache::CheckDType(model.model->config(), kv_dtype));
  DI_ASSIGN_OR_RETURN(effective.kv_cache_dtype, ParseKvCacheDType(DTypeName(kv_dtype)));  // auto -> its type
  std::unique_ptr<MtpDraft> mtp;
  if (effective.speculative.method == "mtp") {
    auto draft =
        MtpDraft::Create(model.model->config(), model.weights, 0, model.num_threads,
                         effective.speculative.mtp_int8 ? MtpMatrices::kInt8 : MtpMatrices::kAsStored);
    if (!draft.ok()) return InvalidArgument("--speculative-method mtp: " + draft.status().message());
    mtp = std::move(*draft);
    DI_LOG_INFO("MTP drafter: %s",
                effective.speculative.mtp_int8
                    ? "float matrices quantized to int8 for drafting (--mtp-weights stored: as stored)"
                    : "matrices as the checkpoint stores them");
  }
  const int64_t bytes_per_token = KvCache(model.model->config(), 1, 1, kv_dtype).BytesPerToken();
  DI_ASSIGN_OR_RETURN(int32_t num_blocks, PlanKvBlocks(effective, bytes_per_token, MemAvailableBytes()));
  DI_LOG_INFO("KV cache: %d blocks of %d tokens, %s, %lld bytes per token (%.1f MiB)", num_blocks,
              effective.block_size, DTypeName(kv_dtype), static_cast<long long>(bytes_per_token),
              static_cast<double>(num_blocks) * effective.block_size * bytes_per_token / (1024.0 * 1024.0));
  const std::vector<int64_t>& windows = model.model->config().sliding_window;
  const bool windowed = std::any_of(windows.begin(), windows.end(), [](int64_t w) { return w > 0; });
  if (effective.swa_full_kv && !windowed) {
    DI_LOG_INFO("--swa-full-kv: the model has no sliding-window layers; its KV is full-attention anyway");
  }
  if (windowed && !effective.swa_full_kv) {
    if (effective.enable_prefix_cache) {
      DI_LOG_INFO(
          "KV: sliding-window layers keep only their window (per-layer pages; --swa-full-kv keeps all); "
          "prefix hits replay at most %lld tokens (DEEPINFER_SWA_REPLAY_TOKENS)",
          static_cast<long long>(effective.swa_replay_tokens));
    } else {
      DI_LOG_INFO(
          "KV: sliding-window layers keep only their window (per-layer pages; --swa-full-kv keeps all)");
    }
    if (static_cast<int64_t>(num_blocks) * model.model->config().num_layers > INT32_MAX) {
      return InvalidArgument("KV cache: too many blocks for per-layer pages; lower --kv-cache-memory");
    }
    KvConfig kv{.num_blocks = 1,
                .enable_prefix_cache = effective.enable_prefix_cache,
                .layer_windows = windows,
                .swa_replay_tokens = effective.swa_replay_tokens};
    DI_RETURN_IF_ERROR(kv.Validate());
  }
  std::unique_ptr<Drafter> drafter;
  if (effective.speculative.method == "ngram") drafter = std::make_unique<NgramDrafter>();
  if (mtp != nullptr) drafter = MakeMtpDrafter(std::move(mtp), effective, num_blocks);
  if (effective.speculative.method == "draft") {
    DI_ASSIGN_OR_RETURN(drafter, MakeDraftModelDrafter(model, effective, num_blocks));
  }
  return std::unique_ptr<Engine>(new EngineImpl(std::move(model), effective, num_blocks, std::move(drafter)));
}

namespace {
// Window-bounded KV (per-layer tables over one pool of single-layer pages)
// for models with sliding-window layers, unless --swa-full-kv.
bool PerLayerKv(const ModelConfig& m, const EngineConfig& c) {
  const bool windowed =
      std::any_of(m.sliding_window.begin(), m.sliding_window.end(), [](int64_t w) { return w > 0; });
  return windowed && !c.swa_full_kv;
}

// The pool's units: blocks spanning every layer, or in per-layer mode as
// many single-layer pages (the same bytes).
int64_t KvUnits(const ModelConfig& m, const EngineConfig& c, int32_t num_blocks) {
  return PerLayerKv(m, c) ? static_cast<int64_t>(num_blocks) * m.num_layers : num_blocks;
}

std::unique_ptr<KvCache> MakeKv(const LoadedModel& m, const EngineConfig& c, int32_t num_blocks) {
  const ModelConfig& mc = m.model->config();
  const DType dtype = ResolveKvCacheDType(c.kv_cache_dtype);
  if (PerLayerKv(mc, c)) return KvCache::Pages(mc, KvUnits(mc, c, num_blocks), c.block_size, dtype);
  return std::make_unique<KvCache>(mc, num_blocks, c.block_size, dtype);
}

KvConfig MakeKvConfig(const LoadedModel& m, const EngineConfig& c, int32_t num_blocks) {
  const ModelConfig& mc = m.model->config();
  return KvConfig{.num_blocks = static_cast<int32_t>(KvUnits(mc, c, num_blocks)),
                  .block_size = c.block_size,
                  .enable_prefix_cache = c.enable_prefix_cache,
                  .layer_windows = PerLayerKv(mc, c) ? mc.sliding_window : std::vector<int64_t>{},
                  .swa_replay_tokens = c.swa_replay_tokens};
}
}  // namespace

EngineImpl::EngineImpl(LoadedModel model, const EngineConfig& config, int32_t num_blocks,
                       std::unique_ptr<Drafter> drafter)
    : loaded_(std::move(model)),
      config_(config),
      kv_(MakeKv(loaded_, config, num_blocks)),
      runner_(*loaded_.model, *kv_, config_.jump_forward),
      scheduler_(std::make_unique<Scheduler>(config.scheduler, MakeKvConfig(loaded_, config, num_blocks))),
      calibrator_(std::max(config.scheduler.max_num_speculative_tokens, 1)),
      output_(loaded_.tokenizer.get(),
              [this](RequestId id) {
                MutexLock lock(mu_);
                AbortLocked(id, FinishReason::kStop);
              }),
      executor_(runner_) {
  if (drafter != nullptr)
    runner_.SetDrafter(std::move(drafter), config_.scheduler.max_num_speculative_tokens);
  if (loaded_.tokenizer) {
    for (int32_t id = 0; id < loaded_.model->config().vocab_size; ++id) {
      if (loaded_.tokenizer->IsEndOfGeneration(id)) end_of_generation_ids_.push_back(id);
    }
  }
  loop_thread_ = std::thread([this] { Loop(); });
}

EngineImpl::~EngineImpl() { Shutdown(/*drain=*/false); }

const Tokenizer& EngineImpl::tokenizer() const {
  DI_CHECK_MSG(loaded_.tokenizer != nullptr, "the model has no tokenizer");
  return *loaded_.tokenizer;
}

Status EngineImpl::ValidateRequest(const GenerationRequest& r) const {
  const int64_t vocab = loaded_.model->config().vocab_size;
  if (r.prompt_tokens.empty()) return InvalidArgument("the prompt is empty");
  for (int32_t t : r.prompt_tokens) {
    if (t < 0 || t >= vocab) {
      return InvalidArgument("prompt token id " + std::to_string(t) + " is out of range [0, " +
                             std::to_string(vocab) + ")");
    }
  }
  if (r.max_tokens < 1) return InvalidArgument("max_tokens must be >= 1");
  DI_RETURN_IF_ERROR(r.sampling.Validate());
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (id >= vocab) {
      return InvalidArgument("logit_bias: token id " + std::to_string(id) + " is out of range");
    }
  }
  if (r.logprobs < -1 || r.logprobs > kMaxLogprobs) {
    return InvalidArgument("logprobs must be in [0, " + std::to_string(kMaxLogprobs) + "]");
  }
  if (r.prompt_logprobs < -1 || r.prompt_logprobs > kMaxLogprobs) {
    return InvalidArgument("prompt_logprobs must be in [0, " + std::to_string(kMaxLogprobs) + "]");
  }
  for (int32_t t : r.stop_token_ids) {
    if (t < 0 || t >= vocab) {
      return InvalidArgument("stop_token_ids: " + std::to_string(t) + " is out of range");
    }
  }
  for (const std::string& s : r.stop) {
    if (s.empty()) return InvalidArgument("stop strings must be non-empty");
  }
  if (!r.stop.empty() && loaded_.tokenizer == nullptr) {
    return InvalidArgument("stop strings need a tokenizer; this model has none");
  }
  const int64_t total = static_cast<int64_t>(r.prompt_tokens.size()) + r.max_tokens;
  if (total > config_.scheduler.max_model_len) {
    return OutOfRange("prompt (" + std::to_string(r.prompt_tokens.size()) + " tokens) + max_tokens (" +
                      std::to_string(r.max_tokens) + ") exceeds the maximum context length (" +
                      std::to_string(config_.scheduler.max_model_len) + ")");
  }
  const int64_t blocks = (total + config_.block_size - 1) / config_.block_size + 1;
  if (blocks > kv_->num_blocks()) {
    return OutOfRange("prompt + max_tokens (" + std::to_string(total) +
                      " tokens) does not fit the KV cache (" +
                      std::to_string((kv_->num_blocks() - 1) * config_.block_size) + " tokens)");
  }
  return Status::Ok();
}

StatusOr<RequestId> EngineImpl::Submit(GenerationRequest request, EventCallback on_event) {
  DI_RETURN_IF_ERROR(ValidateRequest(request));
  if (!on_event) return InvalidArgument("Submit: no event callback");
  auto ctx = std::make_shared<SamplingContext>();
  ctx->params = request.sampling;
  if (request.seed.has_value()) {
    ctx->params.seed = *request.seed;
  } else if (ctx->params.seed == 0) {
    std::random_device entropy;
    ctx->params.seed = static_cast<uint64_t>(entropy()) << 32 | entropy();
  }
  ctx->draw_stream = request.draw_stream;
  ctx->logprobs = request.logprobs;
  ctx->prompt_logprobs = request.prompt_logprobs;
  if (request.prompt_logprobs >= 0) ctx->prompt_logprob_entries.reserve(request.prompt_tokens.size() - 1);
  ctx->constraint = std::move(request.constraint);
  ctx->output_budget =
      std::min<int64_t>(request.max_tokens,
                        config_.scheduler.max_model_len - static_cast<int64_t>(request.prompt_tokens.size()));

  RequestParams params;
  params.prompt_tokens = std::move(request.prompt_tokens);
  params.max_tokens = request.max_tokens;
  params.stop_token_ids = std::move(request.stop_token_ids);
  if (!request.ignore_eos) {
    params.stop_token_ids.insert(params.stop_token_ids.end(), end_of_generation_ids_.begin(),
                                 end_of_generation_ids_.end());
  }
  params.priority = request.priority;
  params.prompt_logprobs = request.prompt_logprobs;

  MutexLock lock(mu_);
  if (!accepting_ || broken_) return Unavailable("the engine is shutting down");
  if (scheduler_->NumWaiting() >= config_.max_waiting_requests) {
    return ResourceExhausted("too many waiting requests (" + std::to_string(config_.max_waiting_requests) +
                             ")");
  }
  params.id = next_id_;
  ctx->id = next_id_;
  const int64_t prompt_tokens = static_cast<int64_t>(params.prompt_tokens.size());
  DI_RETURN_IF_ERROR(scheduler_->AddRequest(std::move(params)));
  const RequestId id = next_id_++;
  ctx->request = scheduler_->ShareRequest(id);
  contexts_[id] = std::move(ctx);
  OutputItem reg;
  reg.kind = OutputItem::Kind::kRegister;
  reg.id = id;
  reg.callback = std::move(on_event);
  reg.stop = std::move(request.stop);
  reg.prompt_tokens = prompt_tokens;
  reg.submitted = std::chrono::steady_clock::now();
  output_.Post(std::move(reg));
  ++work_epoch_;
  work_cv_.notify_all();
  return id;
}

void EngineImpl::Abort(RequestId id) {
  MutexLock lock(mu_);
  AbortLocked(id, FinishReason::kAbort);
}

void EngineImpl::EraseContextLocked(RequestId id) {
  if (contexts_.erase(id) > 0 && !config_.speculative.method.empty()) released_.push_back(id);
}

bool EngineImpl::AbortLocked(RequestId id, FinishReason reason, const std::string& error) {
  StatusOr<Request> aborted = scheduler_->Abort(id, reason);
  if (!aborted.ok()) return false;
  OutputItem item;
  if (auto ctx = contexts_.find(id); ctx != contexts_.end())
    item.first_scheduled = ctx->second->first_scheduled;
  EraseContextLocked(id);
  draft_confidence_.erase(id);
  ++requests_finished_total_;
  item.id = id;
  item.finish_reason = reason;
  item.error = error;
  item.cached_prompt_tokens = aborted->num_cached_prompt_tokens;
  output_.Post(std::move(item));
  ++work_epoch_;
  work_cv_.notify_all();
  return true;
}

void EngineImpl::AbortAllLocked(const std::string& error) {
  std::vector<RequestId> ids;
  for (const auto& [id, ctx] : contexts_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) AbortLocked(id, FinishReason::kAbort, error);
}

void EngineImpl::Shutdown(bool drain) {
  MutexLock once(shutdown_mu_);
  {
    MutexLock lock(mu_);
    accepting_ = false;
    if (!drain) AbortAllLocked("");
    exit_when_idle_ = true;
    ++work_epoch_;
  }
  work_cv_.notify_all();
  if (loop_thread_.joinable()) loop_thread_.join();
  output_.Stop();  // every final event is delivered before Shutdown returns
}

EngineMetrics EngineImpl::Metrics() const {
  EngineMetrics m;
  {
    MutexLock lock(mu_);
    const KvManager& kv = scheduler_->kv();
    const SchedulerStats& s = scheduler_->stats();
    m.num_requests_running = scheduler_->NumRunning();
    m.num_requests_waiting = scheduler_->NumWaiting();
    m.kv_blocks_total = kv.num_blocks();
    m.kv_blocks_in_use = kv.NumUnitsInUse();
    m.swa_replayed_tokens_total = kv.swa_replayed_tokens();
    m.kv_cache_usage_ratio = kv.UsageRatio();
    for (const KvManager::GroupUsage& g : kv.GroupUsages()) {
      m.kv_groups.push_back({g.name, g.units_in_use, kv.num_blocks()});
    }
    m.prompt_tokens_total = s.prompt_tokens;
    m.generation_tokens_total = s.generation_tokens;
    m.prefix_cache_hit_ratio = s.prompt_tokens > 0 ? static_cast<double>(cached_prompt_tokens_total_) /
                                                         static_cast<double>(s.prompt_tokens)
                                                   : 0.0;
    m.prefix_cache_queries_total = s.prompt_tokens;
    m.prefix_cache_hits_total = cached_prompt_tokens_total_;
    m.requests_finished_total = requests_finished_total_;
    m.num_preemptions_total = s.num_preemptions;
    m.steps_total = steps_total_;
    m.steps_planned_ahead_total = steps_planned_ahead_;
    m.steps_planned_without_overlap_total = steps_planned_without_overlap_;
    m.spec_draft_tokens_total = s.spec_draft_tokens;
    m.spec_accepted_tokens_total = s.spec_accepted_tokens;
    if (!config_.speculative.method.empty()) {
      m.spec_num_drafts_total = spec_verifications_;
      m.spec_accepted_per_position = spec_accepted_per_position_;
      m.spec_draft_length_counts = spec_draft_length_counts_;
      m.spec_paused_steps_total = spec_paused_steps_;
      for (const DepthCalibration& d : calibrator_.depths()) {
        const double n = static_cast<double>(std::max<int64_t>(d.trials, 1));
        m.spec_predicted_acceptance.push_back(d.predicted_sum / n);
        m.spec_observed_acceptance.push_back(static_cast<double>(d.accepted) / n);
      }
    }
    m.expert_tokens_total = expert_load_;
  }
  m.executor_idle_seconds_total = executor_.idle_seconds();
  m.executor_busy_seconds_total = executor_.busy_seconds();
  RequestHistograms h = output_.Histograms();
  m.time_to_first_token_seconds = std::move(h.time_to_first_token);
  m.time_per_output_token_seconds = std::move(h.time_per_output_token);
  m.e2e_request_latency_seconds = std::move(h.e2e_latency);
  m.request_queue_time_seconds = std::move(h.queue_time);
  m.request_prefill_time_seconds = std::move(h.prefill_time);
  m.request_decode_time_seconds = std::move(h.decode_time);
  m.request_inference_time_seconds = std::move(h.inference_time);
  m.request_prompt_tokens = std::move(h.prompt_tokens);
  m.request_generation_tokens = std::move(h.generation_tokens);
  return m;
}

}  // namespace deepinfer
