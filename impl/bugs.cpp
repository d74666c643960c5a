#include "impl/bugs.hpp"

#include <array>

namespace lockstep {

namespace {

constexpr std::array catalogue{
    BugDescription{InjectedBug::lifo_handoff, "lifo-handoff",
                   "a release hands the key to the newest waiter instead of the oldest",
                   "not FIFO", BugReach::real_time},
    BugDescription{InjectedBug::token_per_key, "token-per-key",
                   "each key counts its own tokens, so tokens repeat across keys",
                   "is not greater than the earlier token", BugReach::real_time},
    BugDescription{InjectedBug::early_expiry, "early-expiry",
                   "a holder counts as expired from three quarters of its lease",
                   "while token", BugReach::real_time},
    BugDescription{InjectedBug::no_timeout, "no-timeout", "waiters are never answered T",
                   "was never answered", BugReach::real_time},
    BugDescription{InjectedBug::same_owner_renewal, "same-owner-renewal",
                   "the holder's owner asking again is granted at once",
                   "while token", BugReach::real_time},
    BugDescription{InjectedBug::stale_release, "stale-release",
                   "the previous holder's token also releases the key",
                   "for a token that does not hold the key", BugReach::real_time},
    BugDescription{InjectedBug::busy_early, "busy-early",
                   "B one waiter before the per-key limit is reached",
                   "under the limits", BugReach::real_time},
    BugDescription{InjectedBug::sweep_drops_waiters, "sweep-drops-waiters",
                   "the sweep deletes an expired key with waiters and answers them T",
                   "but the request's deadline is", BugReach::real_time},
    BugDescription{InjectedBug::requests_before_timeouts, "requests-before-timeouts",
                   "at one instant, requests are handled before due timeouts",
                   "was never answered", BugReach::exact_replay},
    BugDescription{InjectedBug::sweep_before_timeouts, "sweep-before-timeouts",
                   "at one instant, the sweep runs before due timeouts",
                   "not before its deadline", BugReach::exact_replay},
    BugDescription{InjectedBug::double_answer, "double-answer",
                   "a waiter handed the key is also answered T at its deadline",
                   "answers no queued request", BugReach::real_time},
    // The sweep must visit expired keys in the order their holders' tokens
    // were issued (docs/protocol.md, simple mode point 8); these three
    // visit them in another order, so the tokens of one sweep's hand-offs
    // come out in another order. Only the order within one instant changes,
    // but real time sees it: two keys one sweep handed over carry their
    // tokens in the wrong order (check/tokens.cpp).
    BugDescription{InjectedBug::sweep_reverse_token_order, "sweep-reverse-token-order",
                   "the sweep visits expired keys newest token first",
                   "not in the order of their holders' tokens", BugReach::real_time},
    BugDescription{InjectedBug::sweep_by_key_name, "sweep-by-key-name",
                   "the sweep visits expired keys in the order of their names",
                   "not in the order of their holders' tokens", BugReach::real_time},
    BugDescription{InjectedBug::sweep_by_expiry, "sweep-by-expiry",
                   "the sweep visits expired keys in the order their leases ended",
                   "not in the order of their holders' tokens", BugReach::real_time},
};

}  // namespace

std::span<const BugDescription> bug_catalogue() { return catalogue; }

}  // namespace lockstep
