// Fuzz target: any bytes as a conformance vector. The parser never crashes;
// a vector it accepts (with a short enough run) gets the same verdict from
// the engine and from the reference model, both correct implementations of
// the contract, so any difference is a bug in one of them or in the runner.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "impl/assert.hpp"
#include "model/runner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = lockstep::parse_vector(bytes);
  const auto* vector = std::get_if<lockstep::Vector>(&parsed);
  if (vector == nullptr) return 0;
  // The plain model walks every sweep instant; keep runs short.
  if (vector->final_time.value > 100'000 || vector->final_time.value / vector->limits.sweep_ms.value > 10'000) {
    return 0;
  }
  const auto engine = lockstep::run_vector(*vector, lockstep::ServiceKind::engine);
  const auto model = lockstep::run_vector(*vector, lockstep::ServiceKind::model);
  LOCKSTEP_ASSERT(engine.status == model.status);
  LOCKSTEP_ASSERT(engine.line == model.line);
  return 0;
}
