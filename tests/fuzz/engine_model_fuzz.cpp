// Fuzz target: bytes decoded into a sequence of inputs (acquire, release,
// malformed line, close, time step) over small alphabets and tight limits;
// the engine and the reference model must send the same responses, E
// reasons aside, and the engine's invariants must hold after every input.
#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "impl/engine.hpp"
#include "model/model.hpp"

namespace {

lockstep::Limits tight_limits() {
  lockstep::Limits limits;
  limits.max_keys = 3;
  limits.max_waiters_per_key = 2;
  limits.max_waiters = 4;
  limits.sweep_ms = lockstep::DurationMs{20};
  limits.max_lease_ms = lockstep::DurationMs{50};
  limits.max_wait_ms = lockstep::DurationMs{60};
  return limits;
}

void strip_reasons(lockstep::Outputs& outputs) {
  for (auto& o : outputs) {
    if (o.response.kind == lockstep::ResponseKind::error) o.response.reason.clear();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep;
  Engine engine({tight_limits(), Token{1}, 4, InjectedBug::none});
  Model model(tight_limits());
  TimeMs now{0};
  std::uint64_t generation[3] = {0, 0, 0};
  for (std::size_t i = 0; i + 3 <= size; i += 3) {
    const std::uint8_t op = data[i], a = data[i + 1], b = data[i + 2];
    now.value += (op >> 5) * (op & 0x10 ? 7 : 1);  // time steps of 0..7 or 0..49 ms
    const int slot = a % 3;
    const ConnectionId connection{static_cast<std::uint64_t>(slot) * 1'000'000 + generation[slot]};
    const std::string key = fmt::format("k{}", (a >> 2) % 4);
    Outputs from_engine, from_model;
    switch (op & 0x7) {
      case 0: case 1: case 2: {
        const auto line = fmt::format("A {} o{} {} {}", key, b % 3, 1 + b % 50, (b >> 3) % 3 == 0 ? 0 : b % 61);
        engine.on_line(connection, line, now, from_engine);
        model.on_line(connection, line, now, from_model);
        break;
      }
      case 3: case 4: {
        const auto line = fmt::format("R {} {}", key, 1 + b % (model.next_token().value + 1));
        engine.on_line(connection, line, now, from_engine);
        model.on_line(connection, line, now, from_model);
        break;
      }
      case 5: {
        const std::string line(reinterpret_cast<const char*>(data + i + 1), 2);
        engine.on_line(connection, line, now, from_engine);
        model.on_line(connection, line, now, from_model);
        break;
      }
      case 6:
        engine.on_close(connection, now, from_engine);
        model.on_close(connection, now, from_model);
        ++generation[slot];
        break;
      default:
        engine.advance(now, from_engine);
        model.advance(now, from_model);
        break;
    }
    strip_reasons(from_engine);
    strip_reasons(from_model);
    LOCKSTEP_ASSERT(from_engine == from_model);
    engine.check_invariants();
  }
  return 0;
}
