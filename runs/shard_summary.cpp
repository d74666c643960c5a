#include "runs/shard_summary.hpp"

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/version.hpp"

namespace lockstep::live {

namespace {

using nlohmann::json;

constexpr const char* schema = "lockstep.summary/1";

json header_of(const ShardOf& of, SeedRange shard_range) {
  return json{{"schema", schema},
              {"lockstep", std::string(build_version())},
              {"command", of.command},
              {"run", of.run},
              {"seeds", {of.seeds.first, of.seeds.second}},
              {"shard", {of.shard.index, of.shard.count}},
              {"shard_seeds", {shard_range.first, shard_range.second}}};
}

std::optional<std::string> write_json(const std::string& path, const json& document) {
  std::ofstream file(path, std::ios::binary);
  // Texts are the program's own, but a violation may quote a key: never
  // let a stray byte make the file unreadable.
  file << document.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  file.close();
  if (!file) return fmt::format("--summary-json: cannot write {}", path);
  return std::nullopt;
}

// ---- reading ------------------------------------------------------------------

// A file that is not a summary, or not of this run: one line, exit 2.
struct Refusal {
  std::string what;
};

template <typename T>
T field(const json& object, const char* name, const std::string& file) {
  const auto found = object.find(name);
  if (found == object.end()) throw Refusal{fmt::format("{}: no `{}` in the summary", file, name)};
  try {
    return found->get<T>();
  } catch (const json::exception&) {
    throw Refusal{fmt::format("{}: `{}` is not what a summary holds there", file, name)};
  }
}

json array_field(const json& object, const char* name, const std::string& file) {
  auto value = field<json>(object, name, file);
  if (!value.is_array()) throw Refusal{fmt::format("{}: `{}` is not a list", file, name)};
  return value;
}

SeedRange range_field(const json& object, const char* name, const std::string& file) {
  const auto pair = field<std::vector<std::uint64_t>>(object, name, file);
  if (pair.size() != 2 || pair[0] > pair[1]) throw Refusal{fmt::format("{}: `{}` is not a range A..B", file, name)};
  return {pair[0], pair[1]};
}

struct ShardFile {
  std::string path;
  json document;
  ShardOf of;
  SeedRange shard_range;
};

ShardFile read_shard(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Refusal{fmt::format("{}: cannot be read", path)};
  ShardFile file{path, {}, {}, {}};
  try {
    file.document = json::parse(in);
  } catch (const json::exception&) {
    throw Refusal{fmt::format("{}: not JSON, so not a summary written by --summary-json", path)};
  }
  const json& d = file.document;
  if (!d.is_object() || d.value("schema", "") != schema) {
    throw Refusal{fmt::format("{}: not a summary (schema {}) written by --summary-json", path, schema)};
  }
  file.of.command = field<std::string>(d, "command", path);
  file.of.run = field<std::string>(d, "run", path);
  file.of.seeds = range_field(d, "seeds", path);
  const auto shard = field<std::vector<std::uint64_t>>(d, "shard", path);
  if (shard.size() != 2 || shard[0] < 1 || shard[0] > shard[1] || shard[1] > shard_count_max ||
      seed_count(file.of.seeds) < shard[1]) {
    throw Refusal{fmt::format("{}: `shard` is not I/N of its seeds", path)};
  }
  file.of.shard = Shard{shard[0], shard[1]};
  file.shard_range = range_field(d, "shard_seeds", path);
  if (file.shard_range != shard_seeds(file.of.seeds, file.of.shard)) {
    throw Refusal{fmt::format("{}: its seeds {}..{} are not shard {}/{} of {}..{}", path, file.shard_range.first,
                              file.shard_range.second, shard[0], shard[1], file.of.seeds.first, file.of.seeds.second)};
  }
  if (file.of.command != "sim" && file.of.command != "miss-rate") {
    throw Refusal{fmt::format("{}: a summary of `{}`, which merge does not add up", path, file.of.command)};
  }
  if (!d.contains("summary") || !d["summary"].is_object()) throw Refusal{fmt::format("{}: no `summary` in the file", path)};
  return file;
}

// The shards of one run by lockstep of one version, each once, none missing,
// in shard order.
std::vector<ShardFile> read_shards(const std::vector<std::string>& paths) {
  std::vector<ShardFile> shards;
  for (const auto& path : paths) shards.push_back(read_shard(path));
  const ShardFile& first = shards.front();
  const auto version = field<std::string>(first.document, "lockstep", first.path);
  std::map<std::uint64_t, const ShardFile*> by_index;
  for (const auto& shard : shards) {
    if (shard.of.command != first.of.command || shard.of.run != first.of.run) {
      throw Refusal{fmt::format("{} is a shard of `{}`, but {} of `{}`", shard.path, shard.of.run, first.path,
                                first.of.run)};
    }
    if (shard.of.shard.count != first.of.shard.count) {
      throw Refusal{fmt::format("{} is shard {}/{}, but {} is one of {} shards", shard.path, shard.of.shard.index,
                                shard.of.shard.count, first.path, first.of.shard.count)};
    }
    const auto theirs = field<std::string>(shard.document, "lockstep", shard.path);
    if (theirs != version) {
      throw Refusal{fmt::format("{} was written by lockstep {}, but {} by lockstep {}: the same seeds may differ",
                                shard.path, theirs, first.path, version)};
    }
    const auto [at, fresh] = by_index.emplace(shard.of.shard.index, &shard);
    if (!fresh) {
      throw Refusal{fmt::format("{} and {} are both shard {}/{}", at->second->path, shard.path, shard.of.shard.index,
                                shard.of.shard.count)};
    }
  }
  for (std::uint64_t index = 1; index <= first.of.shard.count; ++index) {
    if (by_index.count(index) == 0) {
      const auto missing = shard_seeds(first.of.seeds, Shard{index, first.of.shard.count});
      throw Refusal{fmt::format("shard {}/{} of `{}` is missing (seeds {}..{})", index, first.of.shard.count,
                                first.of.run, missing.first, missing.second)};
    }
  }
  std::sort(shards.begin(), shards.end(),
            [](const ShardFile& a, const ShardFile& b) { return a.of.shard.index < b.of.shard.index; });
  return shards;
}

// ---- sim ------------------------------------------------------------------------

int merge_sim(const std::vector<ShardFile>& shards) {
  sim::SwarmTotals totals;
  std::deque<std::string> labels;  // what the rows' string_views name
  std::string title;
  bool check_determinism = false;
  for (const auto& shard : shards) {
    const auto& path = shard.path;
    const json& s = shard.document.at("summary");
    title = field<std::string>(s, "title", path);
    check_determinism = field<bool>(s, "check_determinism", path);
    totals.seeds += field<std::uint64_t>(s, "seeds", path);
    totals.failed_seeds += field<std::uint64_t>(s, "failed_seeds", path);
    totals.violations += field<std::uint64_t>(s, "violations", path);
    totals.events += field<std::uint64_t>(s, "events", path);
    totals.simulated_ms += field<std::uint64_t>(s, "simulated_ms", path);
    totals.wall_s += field<double>(s, "wall_s", path);
    totals.failures_not_kept += field<std::uint64_t>(s, "failures_not_kept", path);
    const auto rows = field<std::vector<std::pair<std::string, std::uint64_t>>>(s, "counters", path);
    if (totals.counters.empty()) {
      for (const auto& [label, value] : rows) totals.counters.emplace_back(labels.emplace_back(label), value);
    } else if (rows.size() != totals.counters.size()) {
      throw Refusal{fmt::format("{}: its rows are not those of {}", path, shards.front().path)};
    } else {
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].first != totals.counters[i].first) {
          throw Refusal{fmt::format("{}: its rows are not those of {}", path, shards.front().path)};
        }
        totals.counters[i].second += rows[i].second;
      }
    }
    for (const auto& f : array_field(s, "failures", path)) {
      sim::FailedSeed failure{field<std::uint64_t>(f, "seed", path), field<std::uint64_t>(f, "violation_count", path),
                              field<std::string>(f, "params", path), {}, field<std::string>(f, "reproduce", path)};
      for (const auto& v : array_field(f, "violations", path)) {
        failure.violations.push_back({TimeMs{field<std::int64_t>(v, "at_ms", path)},
                                      field<std::string>(v, "checker", path), field<std::string>(v, "what", path), {}});
      }
      totals.failures.push_back(std::move(failure));
    }
  }
  totals.wall_s = std::max(totals.wall_s, 1e-9);
  for (const auto& failure : totals.failures) sim::print_failure(stdout, failure);
  if (totals.failures_not_kept > 0) {
    fmt::print("\n... and {} failing seeds more, not kept in the summaries (each keeps the first {})\n",
               totals.failures_not_kept, sim::SwarmTotals::failures_kept_max);
  }
  sim::print_summary(stdout, title, check_determinism, totals);
  return totals.violations > 0 ? 1 : 0;
}

// ---- miss-rate --------------------------------------------------------------------

int merge_miss_rate(const std::vector<ShardFile>& shards) {
  MissRateSummary merged;
  for (const auto& shard : shards) {
    const auto& path = shard.path;
    const json& s = shard.document.at("summary");
    merged.mode = field<std::string>(s, "mode", path);
    merged.nodes = field<std::uint32_t>(s, "nodes", path);
    merged.budget_states = field<std::uint64_t>(s, "budget_states", path);
    merged.wall_s += field<double>(s, "wall_s", path);
    const auto catalogue = miss_rate_bugs(merged.mode);
    const auto tallies = array_field(s, "tallies", path);
    if (!merged.tallies.empty() && tallies.size() != merged.tallies.size()) {
      throw Refusal{fmt::format("{}: its bugs are not those of {}", path, shards.front().path)};
    }
    for (std::size_t i = 0; i < tallies.size(); ++i) {
      const json& t = tallies[i];
      const auto name = field<std::string>(t, "bug", path);
      if (merged.tallies.size() <= i) {
        const auto bug = std::find_if(catalogue.begin(), catalogue.end(), [&](const sim::SimBug& b) { return b.name == name; });
        if (bug == catalogue.end()) throw Refusal{fmt::format("{}: `{}` is not a bug of --mode {}", path, name, merged.mode)};
        merged.tallies.emplace_back().bug = *bug;
      }
      auto& into = merged.tallies[i];
      if (into.bug.name != name) throw Refusal{fmt::format("{}: its bugs are not those of {}", path, shards.front().path)};
      into.seeds += field<std::uint64_t>(t, "seeds", path);
      into.simulator_caught += field<std::uint64_t>(t, "simulator_caught", path);
      into.clients_caught += field<std::uint64_t>(t, "clients_caught", path);
      into.checker_caught += field<std::uint64_t>(t, "checker_caught", path);
      into.missed += field<std::uint64_t>(t, "missed", path);
      into.undecided += field<std::uint64_t>(t, "undecided", path);
      into.false_alarms += field<std::uint64_t>(t, "false_alarms", path);
      into.checker_only += field<std::uint64_t>(t, "checker_only", path);
      for (const auto& m : array_field(t, "missed_seeds", path)) {
        into.missed_seeds.push_back({field<std::uint64_t>(m, "seed", path), field<bool>(m, "undecided", path),
                                     field<bool>(m, "clients_saw_it", path),
                                     field<std::string>(m, "simulator_checkers", path),
                                     field<std::string>(m, "within_bounds", path)});
      }
      for (const auto seed : field<std::vector<std::uint64_t>>(t, "undecided_seeds", path)) into.undecided_seeds.push_back(seed);
      for (const auto seed : field<std::vector<std::uint64_t>>(t, "false_alarm_seeds", path)) {
        into.false_alarm_seeds.push_back(seed);
      }
    }
  }
  merged.seeds = shards.front().of.seeds;
  print_miss_rate_header(merged);
  return print_miss_rate_table(merged);
}

}  // namespace

std::optional<std::string> write_sim_summary(const std::string& path, const ShardOf& of, const std::string& title,
                                             bool check_determinism, const sim::SwarmTotals& totals) {
  json failures = json::array();
  for (const auto& failure : totals.failures) {
    json violations = json::array();
    for (const auto& v : failure.violations) violations.push_back({{"at_ms", v.at.value}, {"checker", v.checker}, {"what", v.what}});
    failures.push_back({{"seed", failure.seed},
                        {"violation_count", failure.violation_count},
                        {"params", failure.params},
                        {"violations", violations},
                        {"reproduce", failure.reproduce}});
  }
  json counters = json::array();
  for (const auto& [label, value] : totals.counters) counters.push_back({std::string(label), value});
  json document = header_of(of, shard_seeds(of.seeds, of.shard));
  document["summary"] = {{"title", title},
                         {"check_determinism", check_determinism},
                         {"seeds", totals.seeds},
                         {"failed_seeds", totals.failed_seeds},
                         {"violations", totals.violations},
                         {"events", totals.events},
                         {"simulated_ms", totals.simulated_ms},
                         {"wall_s", totals.wall_s},
                         {"counters", counters},
                         {"failures", failures},
                         {"failures_not_kept", totals.failures_not_kept}};
  return write_json(path, document);
}

std::optional<std::string> write_miss_rate_summary(const std::string& path, const ShardOf& of,
                                                   const MissRateSummary& summary) {
  json tallies = json::array();
  for (const auto& t : summary.tallies) {
    json missed = json::array();
    for (const auto& m : t.missed_seeds) {
      missed.push_back({{"seed", m.seed},
                        {"undecided", m.undecided},
                        {"clients_saw_it", m.clients_saw_it},
                        {"simulator_checkers", m.simulator_checkers},
                        {"within_bounds", m.within_bounds}});
    }
    tallies.push_back({{"bug", t.bug.name},
                       {"seeds", t.seeds},
                       {"simulator_caught", t.simulator_caught},
                       {"clients_caught", t.clients_caught},
                       {"checker_caught", t.checker_caught},
                       {"missed", t.missed},
                       {"undecided", t.undecided},
                       {"false_alarms", t.false_alarms},
                       {"checker_only", t.checker_only},
                       {"missed_seeds", missed},
                       {"undecided_seeds", t.undecided_seeds},
                       {"false_alarm_seeds", t.false_alarm_seeds}});
  }
  json document = header_of(of, summary.seeds);
  document["summary"] = {{"mode", summary.mode},
                         {"nodes", summary.nodes},
                         {"budget_states", summary.budget_states},
                         {"wall_s", summary.wall_s},
                         {"tallies", tallies}};
  return write_json(path, document);
}

int run_merge(const std::vector<std::string>& files) {
  try {
    const auto shards = read_shards(files);
    return shards.front().of.command == "sim" ? merge_sim(shards) : merge_miss_rate(shards);
  } catch (const Refusal& refusal) {
    std::fflush(stdout);
    fmt::print(stderr, "merge: {}\n", refusal.what);
    return 2;
  }
}

}  // namespace lockstep::live
