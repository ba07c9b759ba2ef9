#include "model/swiglu_mlp.h"

#include "model/ops.h"

namespace deepinfer {

Status BindSwiglu(const WeightBinder& b, const std::string& gate, const std::string& up,
                  const std::string& down, int64_t hidden, int64_t ffn, SwigluWeights& w) {
  DI_ASSIGN_OR_RETURN(w.gate, b.Matrix(gate, ffn, hidden));
  DI_ASSIGN_OR_RETURN(w.up, b.Matrix(up, ffn, hidden));
  DI_ASSIGN_OR_RETURN(w.down, b.Matrix(down, hidden, ffn));
  return Status::Ok();
}

void SwigluForward(const SwigluWeights& w, const float* x, int64_t n, ThreadPool& pool, SwigluScratch& s,
                   float* out) {
  const int64_t ff = w.ffn();
  s.gate.resize(static_cast<size_t>(n * ff));
  s.up.resize(static_cast<size_t>(n * ff));
  ops::SharedInputMatMul({{&w.gate, nullptr, s.gate.data()}, {&w.up, nullptr, s.up.data()}}, x, n, pool);
  if (w.gelu_tanh) {
    ops::GeluTanhMul(s.gate.data(), s.up.data(), n * ff);
  } else {
    ops::SiluMul(s.gate.data(), s.up.data(), n * ff);
  }
  ops::MatMul(w.down, s.gate.data(), n, nullptr, out, pool);
}

}  // namespace deepinfer
