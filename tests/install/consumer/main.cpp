// Takes the lock `printer` from the server at HOST PORT and gives it back.
#include <cstdio>
#include <string>

#include "client/client.hpp"
#include "client/cluster_client.hpp"

int main(int argc, char** argv) {
  lockstep::client::Client lock;
  if (argc != 3 || !lock.connect(argv[1], static_cast<std::uint16_t>(std::stoi(argv[2])))) return 2;
  int status = 1;
  lock.acquire("printer", "consumer", 30'000, 0, [&](const lockstep::Response& granted) {
    if (granted.kind != lockstep::ResponseKind::granted) return;
    std::printf("granted %llu\n", static_cast<unsigned long long>(granted.token.value));
    lock.release("printer", granted.token, [&](const lockstep::Response& released) {
      status = released.kind == lockstep::ResponseKind::released ? 0 : 1;
    });
  });
  while (lock.in_flight() > 0) lock.poll(std::chrono::seconds(1));
  return status;
}
