// Validators for the command line (validators_numbers.cpp, _names.cpp and
// _paths.cpp). Every option has a range that means
// something and is checked when the command line is parsed, so a bad
// argument is refused (exit 2, one line naming the option) before anything
// runs, never discovered after a run or by an assertion.
//
// Numbers get their own validator because CLI11's conversion takes what
// strtoull takes: a sign on an unsigned option (`-1` would become
// 2^64 - 1), hexadecimal and octal. Here a number is decimal digits only,
// and the validator rewrites it without leading zeros before CLI11
// converts it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace lockstep::cli {

// Decimal digits only (leading zeros allowed), fitting 64 bits: how every
// number on the command line is read.
std::optional<std::uint64_t> digits_value(const std::string& text);

// Seeds are 0 .. 2^63 - 1: every tool that reads a trace or a reproduce
// line can hold them, and a range never wraps around.
inline constexpr std::uint64_t seed_max = (std::uint64_t{1} << 63) - 1;
// `A..B` (A <= B) or one seed `A`, each in 0..seed_max, and at most
// `count_max` seeds; the validator of `--seeds` and what the command reads
// once it has passed.
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_seed_range(
    const std::string& text, std::uint64_t count_max = std::numeric_limits<std::uint64_t>::max());
CLI::Validator seed_range(std::uint64_t count_max = std::numeric_limits<std::uint64_t>::max());

// A whole number in [low, high], for an unsigned option.
CLI::Validator whole(std::uint64_t low, std::uint64_t high = std::numeric_limits<std::uint64_t>::max());
// A whole number in [low, high], for a signed option (a `-` only when low < 0).
CLI::Validator whole_signed(std::int64_t low, std::int64_t high = std::numeric_limits<std::int64_t>::max());

// A decimal number (digits, optionally a fraction: `2`, `0.5`) in [low, high],
// for an option held as a double; no sign, exponent, `inf` or `nan`.
CLI::Validator decimal(double low, double high);

// A range of milliseconds `A..B`, whole numbers with low <= A <= B <= 2^40
// (the longest duration a limit takes); whether B fits the target's own
// maximum is known only once the limits are settled, when the command reads
// it again with parse_ms_range and that maximum.
inline constexpr std::int64_t ms_range_max = std::int64_t{1} << 40;
CLI::Validator ms_range(std::int64_t low);
// `A..B` with low <= A <= B <= high (high at most ms_range_max), or nothing.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_ms_range(const std::string& text, std::int64_t low,
                                                                    std::int64_t high);

// An IPv4 address in dotted decimal (what a server listens on).
CLI::Validator ipv4_address();
// HOST:PORT with a port in 1..65535 (what a client connects to).
CLI::Validator host_and_port();
// HOST:PORT,HOST:PORT,... (each checked as host_and_port()).
CLI::Validator host_and_port_list();

// A key or an owner as the protocol defines them: 1 to 250 bytes of
// printable ASCII without space.
CLI::Validator protocol_name();

// One of `names` (a catalogue of bugs, modes); the refusal says which
// catalogue and where to find it, e.g. "lockstep serve --list-bugs".
CLI::Validator one_of(std::vector<std::string> names, std::string catalogue, std::string listed_by);

// A file that exists, is not a folder, and can be read.
// An executable: a path to an executable file, or a name found on PATH.
CLI::Validator executable_on_path();
CLI::Validator readable_file();
// A file or a folder that exists and can be read.
CLI::Validator readable_path();
// A file that can be written: not a folder, and either writable or absent
// from a folder that exists and can be written. Nothing is created.
CLI::Validator writable_file();
// A file read if it exists and rewritten later (serve's token mark): a
// file that can be written (as above), and read when it exists.
CLI::Validator state_file();
// A folder that can be written, or be created (its nearest existing
// ancestor is a folder that can be written). Nothing is created.
CLI::Validator writable_folder();

// The same checks, for paths that come from elsewhere than an option (a
// default, a file named inside another): empty when fine, else the reason.
std::string why_not_readable_file(const std::string& path);
std::string why_not_writable_file(const std::string& path);
std::string why_not_writable_folder(const std::string& path);

}  // namespace lockstep::cli
