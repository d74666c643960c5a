// Fuzz target: any bytes through the codec. Lines are framed with the
// server's LineFramer (which must stay bounded), each line is parsed as a
// request (simple mode's and a cluster node's, with session fields) and as a
// response; a parsed request formats back to the very same line, and a
// parsed response to a line that parses to the same response.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "impl/assert.hpp"
#include "impl/line_framer.hpp"
#include "impl/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const lockstep::Limits limits;
  lockstep::LineFramer framer(limits.max_line_bytes);
  framer.feed(bytes);
  LOCKSTEP_ASSERT(framer.buffered_bytes() <= size);
  while (const auto line = framer.next_line()) {
    LOCKSTEP_ASSERT(line->size() <= size);
    const auto parsed = lockstep::parse_request(*line, limits);
    if (const auto* request = std::get_if<lockstep::Request>(&parsed)) {
      LOCKSTEP_ASSERT(lockstep::format_request(*request) == *line);
    }
    const auto with_session = lockstep::parse_session_request(*line, limits);
    if (const auto* request = std::get_if<lockstep::SessionRequest>(&with_session)) {
      LOCKSTEP_ASSERT(lockstep::format_request(request->request, request->session) == *line);
    }
    if (const auto response = lockstep::parse_response(*line)) {
      LOCKSTEP_ASSERT(lockstep::parse_response(lockstep::format_response(*response)) == response);
    }
  }
  return 0;
}
