#include "tools/collective_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "sim/chip/chip_preset.h"
#include "sim/kernel.h"
#include "sim/memory_estimate.h"
#include "sim/net/collective.h"
#include "sim/net/collective_runner.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"
#include "sim/net_preset.h"
#include "strategy/runtime/slice.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

using sim::net::Algorithm;
using sim::net::CollectiveOp;
using sim::net::CollectiveRequest;
using sim::net::Topology;

constexpr const char* kAxisLetters = "xyzc";
constexpr int64_t kMaxBytes = int64_t{1} << 40;

// Wraps a parse error of a flag value as a usage error (exit 2).
absl::Status AsUsage(const absl::Status& s) {
  return s.ok() ? s : UsageError(s.message());
}

absl::StatusOr<runtime::SliceLayout> Layout(const ParsedArgs& args) {
  const bool slice = args.Has("slice");
  const bool shape = args.Has("shape") || args.Has("generation");
  if (slice == shape) {
    return UsageError(
        "give either --slice=NAME or --generation=GEN --shape=XxY[xZ]");
  }
  if (slice) {
    if (args.Has("custom")) {
      return UsageError("--custom applies to --shape, not to --slice");
    }
    return runtime::ParseSlice(args.Get("slice"));
  }
  if (!args.Has("shape") || !args.Has("generation")) {
    return UsageError("--shape and --generation go together");
  }
  TPUSIM_ASSIGN_OR_RETURN(const runtime::TpuGeneration* g,
                          runtime::FindTpuGeneration(args.Get("generation")));
  const std::string text = args.Get("shape");
  std::vector<std::string> parts = absl::StrSplit(text, 'x');
  std::array<int, 3> mesh = {1, 1, 1};
  if (parts.empty() || parts.size() > 3) {
    return UsageError(absl::StrCat(
        "--shape=", text, " must be XxY or XxYxZ (positive integers)"));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!ParseExactInt(parts[i], &mesh[i]) || mesh[i] < 1) {
      return UsageError(absl::StrCat(
          "--shape=", text, " must be XxY or XxYxZ (positive integers)"));
    }
  }
  // A 2-D shape of a 3-D generation (or the reverse) is not read as XxYx1:
  // the generation's torus has as many axes as its chips have neighbours.
  const int rank = g->torus_rank;
  if (static_cast<int>(parts.size()) != rank) {
    return UsageError(absl::StrCat(
        "--shape=", text, " has ", parts.size(), " axes; generation ", g->name,
        " has a ", rank, "-D torus, so give ", rank == 2 ? "XxY" : "XxYxZ"));
  }
  const std::string name = absl::StrCat(g->name, ":", text);
  if (args.Has("custom")) {
    return runtime::LayoutCustomChipMesh(*g, mesh, runtime::kDefaultRank, name);
  }
  return runtime::LayoutChipMesh(*g, mesh, runtime::kDefaultRank, name);
}

// "all", axis letters ("x", "xy", "c" = the cores of a chip) or a group size.
absl::StatusOr<std::vector<std::vector<int>>> Groups(const Topology& t,
                                                     absl::string_view spec) {
  const int n = t.num_devices();
  int size = 0;
  if (ParseExactInt(spec, &size)) {
    if (size < 1 || n % size != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--groups=", spec, ": a group size must divide the ", n,
                       " devices of ", t.name()));
    }
    std::vector<std::vector<int>> groups(n / size);
    for (int d = 0; d < n; ++d) groups[d / size].push_back(d);
    return groups;
  }
  std::array<bool, 4> in = {false, false, false, false};
  if (spec == "all") {
    in = {true, true, true, true};
  } else {
    if (spec.empty()) {
      return UsageError(
          "--groups is empty; expected all, axis letters "
          "(x, y, z, c) or a group size");
    }
    for (char ch : spec) {
      const char* pos = std::strchr(kAxisLetters, ch);
      if (pos == nullptr || ch == '\0') {
        return UsageError(absl::StrCat(
            "--groups=", spec,
            " is not allowed; expected all, axis letters (x, y, z, c = the "
            "cores of a chip) or a group size"));
      }
      const int axis = static_cast<int>(pos - kAxisLetters);
      if (in[axis]) {
        return UsageError(absl::StrCat("--groups=", spec, " names axis ",
                                       std::string(1, ch), " twice"));
      }
      if (t.AxisLength(axis) == 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--groups=", spec, ": ", t.name(), " has no ", std::string(1, ch),
            " axis to group along (its length is 1)"));
      }
      in[axis] = true;
    }
  }
  // Devices that agree on every axis outside the group share a group; each
  // group in coordinate order (x fastest, then y, z, core).
  std::map<std::array<int, 4>, std::vector<std::pair<std::array<int, 4>, int>>>
      by_key;
  for (int d = 0; d < n; ++d) {
    std::array<int, 4> key, order;
    for (int a = 0; a < 4; ++a) {
      const int c = t.DeviceCoord(d, a);
      key[a] = in[a] ? 0 : c;
      order[3 - a] = in[a] ? c : 0;  // compare core, z, y, x: x fastest
    }
    by_key[key].push_back({order, d});
  }
  std::vector<std::vector<int>> groups;
  for (auto& [key, members] : by_key) {
    std::sort(members.begin(), members.end());
    std::vector<int> g;
    for (const auto& m : members) g.push_back(m.second);
    groups.push_back(std::move(g));
  }
  // Order groups by their first device.
  std::sort(groups.begin(), groups.end());
  return groups;
}

// nccl-tests bus bandwidth factor.
double BusFactor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case CollectiveOp::kCollectivePermute:
      return 1.0;
  }
  return 1.0;
}

std::string FormatBytes(int64_t b) {
  if (b >= (1 << 30) && b % (1 << 30) == 0) return absl::StrCat(b >> 30, "GiB");
  if (b >= (1 << 20) && b % (1 << 20) == 0) return absl::StrCat(b >> 20, "MiB");
  if (b >= (1 << 10) && b % (1 << 10) == 0) return absl::StrCat(b >> 10, "KiB");
  return absl::StrCat(b, "B");
}

struct SizeResult {
  int64_t bytes = 0;
  std::string algorithm;
  int64_t time_ps = 0;
  int64_t bound_ps = 0;
  int64_t messages = 0;
  // Busiest link.
  int link_chip = 0;
  int link_dir = 0;
  int64_t link_busy_ps = 0;
  int64_t link_bytes = 0;
  double wall_s = 0;
};

std::string LinkName(const Topology& t, int chip, int dir) {
  const std::array<int, 3> c = t.coords(chip);
  std::string where = absl::StrCat("(", c[0], ",", c[1], ",", c[2], ")");
  if (dir < sim::net::kNumDirections) {
    return absl::StrCat(where, " ", sim::net::DirectionName(dir));
  }
  return absl::StrCat(where, " core", dir - sim::net::kNumDirections, "->core",
                      1 - (dir - sim::net::kNumDirections));
}

absl::Status RunCollective(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format=", format,
                                   " is not allowed; expected text or json"));
  }
  absl::StatusOr<CollectiveOp> op =
      sim::net::ParseCollectiveOp(args.Get("op", "all_reduce"));
  TPUSIM_RETURN_IF_ERROR(AsUsage(op.status()));
  absl::StatusOr<Algorithm> algorithm =
      sim::net::ParseAlgorithm(args.Get("algorithm", "auto"));
  TPUSIM_RETURN_IF_ERROR(AsUsage(algorithm.status()));
  absl::StatusOr<sim::net::WrapMode> wrap =
      sim::net::ParseWrapMode(args.Get("wrap", "generation"));
  TPUSIM_RETURN_IF_ERROR(AsUsage(wrap.status()));
  absl::StatusOr<int64_t> factor = args.GetInt("step-factor", 2, 2);
  TPUSIM_RETURN_IF_ERROR(AsUsage(factor.status()));
  absl::StatusOr<int64_t> packet = args.GetInt("packet-bytes", 0, 0);
  TPUSIM_RETURN_IF_ERROR(AsUsage(packet.status()));
  const std::string order = args.Get("construction-order", "forward");
  if (order != "forward" && order != "reverse") {
    return UsageError(absl::StrCat("--construction-order=", order,
                                   " is not allowed; expected forward or "
                                   "reverse"));
  }
  absl::StatusOr<std::vector<int64_t>> sizes =
      ParseByteSweep(args.Get("bytes", "64MiB"), *factor);
  TPUSIM_RETURN_IF_ERROR(AsUsage(sizes.status()));

  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout, Layout(args));
  TPUSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(layout, *wrap));
  TPUSIM_ASSIGN_OR_RETURN(const sim::ChipPreset* preset,
                          sim::FindChipPreset(topology.generation().name));
  TPUSIM_ASSIGN_OR_RETURN(sim::net::NetConfig config,
                          sim::NetConfigFromPreset(*preset));
  config.packet_bytes = *packet;
  const std::string group_spec = args.Get("groups", "all");
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::vector<int>> group_list,
                          Groups(topology, group_spec));
  TPUSIM_ASSIGN_OR_RETURN(
      std::shared_ptr<const sim::net::GroupPartition> groups,
      sim::net::GroupPartition::Create(topology, group_list));
  std::shared_ptr<const sim::net::PermutePairs> pairs;
  if (*op == CollectiveOp::kCollectivePermute) {
    // Each member sends to the next member of its group.
    std::vector<std::pair<int, int>> list;
    for (const std::vector<int>& g : group_list) {
      if (g.size() < 2) continue;
      for (size_t i = 0; i < g.size(); ++i) {
        list.push_back({g[i], g[(i + 1) % g.size()]});
      }
    }
    TPUSIM_ASSIGN_OR_RETURN(pairs,
                            sim::net::PermutePairs::Create(topology, list));
  }
  // Check every size on every group before simulating anything.
  std::vector<CollectiveRequest> requests;
  for (int64_t bytes : *sizes) {
    CollectiveRequest r;
    r.op = *op;
    r.bytes = bytes;
    r.algorithm = *algorithm;
    r.groups = groups;
    r.pairs = pairs;
    for (int g = 0; g < groups->num_groups(); ++g) {
      TPUSIM_RETURN_IF_ERROR(
          sim::net::ResolveAlgorithm(topology, r, g).status());
    }
    requests.push_back(std::move(r));
  }

  // The memory it will need, before anything is built.
  TPUSIM_ASSIGN_OR_RETURN(const int64_t memory_limit, MemoryLimitFlag(args));
  {
    sim::CollectiveShape shape;
    shape.devices = topology.num_devices();
    shape.links = topology.num_links();
    shape.packet_bytes = config.packet_bytes;
    shape.hop_latency_ps = config.hop_latency.count();
    shape.link_bytes_per_second = config.link_bytes_per_second;
    shape.max_bytes = *std::max_element(sizes->begin(), sizes->end());
    TPUSIM_RETURN_IF_ERROR(sim::CheckMemoryLimit(
        sim::EstimateCollectiveMemory(shape), memory_limit));
  }

  std::unique_ptr<sim::net::Network> network;
  sim::net::NetworkOptions options;
  options.reverse_construction = order == "reverse";
  TPUSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<sim::KernelSession> session,
      sim::KernelSession::Create([&]() -> absl::Status {
        TPUSIM_ASSIGN_OR_RETURN(
            network, sim::net::Network::Create(topology, config, options));
        return absl::OkStatus();
      }));
  const std::vector<int> devices = sim::net::AllDevices(topology);
  std::vector<SizeResult> results;
  std::vector<sim::net::LinkStats> before = network->Links();
  int64_t messages_before = 0;
  for (const CollectiveRequest& r : requests) {
    const auto t0 = std::chrono::steady_clock::now();
    TPUSIM_ASSIGN_OR_RETURN(
        std::vector<sim::net::JobResult> run,
        sim::net::RunCollectives(*session, *network, {{r, devices}}));
    const auto t1 = std::chrono::steady_clock::now();
    SizeResult s;
    s.bytes = r.bytes;
    s.algorithm = sim::net::AlgorithmName(run[0].algorithm);
    s.time_ps = (run[0].end - run[0].start).count();
    s.wall_s = std::chrono::duration<double>(t1 - t0).count();
    const int bound_groups =
        r.op == CollectiveOp::kCollectivePermute ? 1 : groups->num_groups();
    for (int g = 0; g < bound_groups; ++g) {
      s.bound_ps = std::max(
          s.bound_ps, sim::net::CollectiveLowerBound(topology, config, r, g)
                          .value()
                          .count());
    }
    int64_t messages = 0;
    for (int d : devices)
      messages += network->endpoint(d).stats().messages_sent;
    s.messages = messages - messages_before;
    messages_before = messages;
    std::vector<sim::net::LinkStats> after = network->Links();
    for (size_t i = 0; i < after.size(); ++i) {
      const int64_t busy = (after[i].busy - before[i].busy).count();
      if (busy > s.link_busy_ps) {
        s.link_busy_ps = busy;
        s.link_chip = after[i].chip;
        s.link_dir = after[i].dir;
        s.link_bytes = after[i].bytes - before[i].bytes;
      }
    }
    before = std::move(after);
    results.push_back(std::move(s));
  }

  const int group_size = static_cast<int>(group_list[0].size());
  bool same_size = true;
  for (const auto& g : group_list) {
    same_size = same_size && static_cast<int>(g.size()) == group_size;
  }
  const double bus = BusFactor(*op, group_size);
  auto util = [](const SizeResult& s) {
    return s.time_ps > 0 ? static_cast<double>(s.link_busy_ps) / s.time_ps
                         : 0.0;
  };
  auto algbw = [](const SizeResult& s) {
    return s.time_ps > 0 ? s.bytes / (s.time_ps * 1e-12) / 1e9 : 0.0;
  };
  if (format == "json") {
    std::vector<Json> items;
    for (const SizeResult& s : results) {
      const std::array<int, 3> c = topology.coords(s.link_chip);
      items.push_back(Json::Object({
          {"bytes", Json::Int(s.bytes)},
          {"algorithm", Json::String(s.algorithm)},
          {"sim_time_ps", Json::Int(s.time_ps)},
          {"algbw_gbps", Json::Float64(algbw(s))},
          {"busbw_gbps", Json::Float64(algbw(s) * bus)},
          {"lower_bound_ps", Json::Int(s.bound_ps)},
          {"time_over_bound",
           Json::Float64(s.bound_ps > 0
                             ? static_cast<double>(s.time_ps) / s.bound_ps
                             : 0.0)},
          {"messages", Json::Int(s.messages)},
          {"busiest_link",
           Json::Object(
               {{"chip", Json::Int(s.link_chip)},
                {"coords", Json::Array({Json::Int(c[0]), Json::Int(c[1]),
                                        Json::Int(c[2])})},
                {"direction",
                 Json::String(s.link_dir < sim::net::kNumDirections
                                  ? sim::net::DirectionName(s.link_dir)
                                  : (s.link_dir == 6 ? "core0->core1"
                                                     : "core1->core0"))},
                {"busy_ps", Json::Int(s.link_busy_ps)},
                {"bytes", Json::Int(s.link_bytes)},
                {"utilization", Json::Float64(util(s))}})},
          {"wall_time_s", Json::Float64(s.wall_s)},
      }));
    }
    std::vector<Json> shape, wraps;
    for (int d = 0; d < 3; ++d) {
      shape.push_back(Json::Int(topology.dims()[d]));
      wraps.push_back(Json::Bool(topology.wraps(d)));
    }
    Json report = Json::Object({
        {"command", Json::String("collective")},
        {"slice", Json::String(topology.name())},
        {"generation", Json::String(topology.generation().name)},
        {"shape", Json::Array(std::move(shape))},
        {"wraparound", Json::Array(std::move(wraps))},
        {"devices", Json::Int(topology.num_devices())},
        {"op", Json::String(sim::net::CollectiveOpName(*op))},
        {"algorithm_requested",
         Json::String(sim::net::AlgorithmName(*algorithm))},
        {"groups", Json::String(group_spec)},
        {"num_groups", Json::Int(groups->num_groups())},
        {"group_size", same_size ? Json::Int(group_size) : Json::Null()},
        {"config",
         Json::Object({
             {"link_bytes_per_second",
              Json::Float64(config.link_bytes_per_second)},
             {"hop_latency_ps", Json::Int(config.hop_latency.count())},
             {"on_chip_bytes_per_second",
              Json::Float64(config.on_chip_bytes_per_second)},
             {"on_chip_latency_ps", Json::Int(config.on_chip_latency.count())},
             {"vector_reduce_bytes_per_second",
              Json::Float64(config.vector_reduce_bytes_per_second)},
             {"packet_bytes", Json::Int(config.packet_bytes)},
             {"pipeline_chunk_bytes", Json::Int(config.pipeline_chunk_bytes)},
         })},
        {"results", Json::Array(std::move(items))},
    });
    out << report.Dump() << "\n";
    return absl::OkStatus();
  }
  std::vector<std::string> wrapped;
  for (int d = 0; d < 3; ++d) {
    if (topology.wraps(d)) wrapped.push_back(std::string(1, kAxisLetters[d]));
  }
  out << absl::StrFormat(
      "# tpusim collective: %s on %s (%dx%dx%d chips, wraparound: %s), %d "
      "devices, %d group(s)%s\n",
      sim::net::CollectiveOpName(*op), topology.name(), topology.dims()[0],
      topology.dims()[1], topology.dims()[2],
      wrapped.empty() ? "none" : absl::StrJoin(wrapped, " "),
      topology.num_devices(), groups->num_groups(),
      same_size ? absl::StrCat(" of ", group_size) : "");
  out << absl::StrFormat(
      "# B = %g GB/s per link direction, hop %g us, packets: %s\n",
      config.link_bytes_per_second / 1e9, config.hop_latency.microseconds(),
      config.packet_bytes == 0 ? "whole messages"
                               : absl::StrCat(config.packet_bytes, " bytes"));
  out << absl::StrFormat("%10s %-10s %12s %11s %11s %12s %8s %-22s %6s %9s\n",
                         "bytes", "algorithm", "time(us)", "algbw(GB/s)",
                         "busbw(GB/s)", "bound(us)", "t/bound", "busiest link",
                         "util", "wall(s)");
  for (const SizeResult& s : results) {
    out << absl::StrFormat(
        "%10s %-10s %12.3f %11.3f %11.3f %12.3f %8.3f %-22s %6.3f %9.4f\n",
        FormatBytes(s.bytes), s.algorithm, s.time_ps * 1e-6, algbw(s),
        algbw(s) * bus, s.bound_ps * 1e-6,
        s.bound_ps > 0 ? static_cast<double>(s.time_ps) / s.bound_ps : 0.0,
        LinkName(topology, s.link_chip, s.link_dir), util(s), s.wall_s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> MemoryLimitFlag(const ParsedArgs& args) {
  if (!args.Has("memory-limit")) return sim::kDefaultMemoryLimitBytes;
  absl::StatusOr<int64_t> limit = ParseByteSize(args.Get("memory-limit"));
  if (!limit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory-limit: ", limit.status().message()));
  }
  return *limit;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  struct Suffix {
    const char* text;
    int64_t scale;
  };
  static constexpr Suffix kSuffixes[] = {{"KiB", 1LL << 10},
                                         {"MiB", 1LL << 20},
                                         {"GiB", 1LL << 30},
                                         {"KB", 1000},
                                         {"MB", 1000000},
                                         {"GB", 1000000000},
                                         {"B", 1}};
  absl::string_view number = text;
  int64_t scale = 1;
  for (const Suffix& s : kSuffixes) {
    if (absl::EndsWith(text, s.text)) {
      number = text.substr(0, text.size() - std::strlen(s.text));
      scale = s.scale;
      break;
    }
  }
  int64_t value = 0;
  if (!ParseExactInt(number, &value) || value <= 0 ||
      value > kMaxBytes / scale) {
    return absl::InvalidArgumentError(absl::StrCat(
        "byte size \"", text,
        "\" is not allowed; expected a positive integer with an optional "
        "suffix B, KiB, MiB, GiB, KB, MB or GB, at most 1 TiB"));
  }
  return value * scale;
}

absl::StatusOr<std::vector<int64_t>> ParseByteSweep(absl::string_view text,
                                                    int64_t factor) {
  const size_t dots = text.find("..");
  if (dots == absl::string_view::npos) {
    TPUSIM_ASSIGN_OR_RETURN(int64_t b, ParseByteSize(text));
    return std::vector<int64_t>{b};
  }
  TPUSIM_ASSIGN_OR_RETURN(int64_t lo, ParseByteSize(text.substr(0, dots)));
  TPUSIM_ASSIGN_OR_RETURN(int64_t hi, ParseByteSize(text.substr(dots + 2)));
  if (hi < lo) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--bytes=", text, ": the range must go from small to large"));
  }
  std::vector<int64_t> sizes;
  for (int64_t b = lo; b <= hi; b *= factor) {
    sizes.push_back(b);
    if (b > hi / factor) break;
  }
  return sizes;
}

Subcommand CollectiveCommand() {
  Subcommand s;
  s.name = "collective";
  s.summary = "time a collective on the ICI network model (like nccl-tests)";
  s.usage =
      "tpusim collective (--slice=NAME | --generation=GEN --shape=XxY[xZ] "
      "[--custom]) [--op=OP] [--bytes=SIZE[..SIZE]] [--algorithm=ALG] "
      "[--groups=SPEC] [--format=text|json]";
  s.flags = {
      {"slice", true, "a slice name, e.g. v4-128, v5litepod-256"},
      {"generation", true, "with --shape: v2, v3, v4, v5e, v5p or v6e"},
      {"shape", true, "chips per axis, e.g. 16x16 or 4x4x8"},
      {"custom", false,
       "allow a --shape beyond the generation's largest slice (scale studies)"},
      {"wrap", true, "wraparound: generation (default), on or off"},
      {"op", true,
       "all_reduce (default), all_gather, reduce_scatter, all_to_all, permute"},
      {"bytes", true,
       "per-device size, or a sweep LO..HI (default 64MiB); suffixes B, KiB, "
       "MiB, GiB, KB, MB, GB"},
      {"step-factor", true, "sweep factor (default 2)"},
      {"algorithm", true,
       "auto (default), ring, bidir_ring, torus, multi_axis, direct"},
      {"groups", true,
       "all (default), axis letters (x, y, z, c = cores; xy = planes) or a "
       "group size (consecutive device ids)"},
      {"packet-bytes", true, "link packet size; 0 (default) = whole messages"},
      {"memory-limit", true,
       "SIZE (e.g. 4GiB): fail before the work when the estimated memory "
       "(network state and packets in flight) is above it (default 16GiB, "
       "fixed)"},
      {"construction-order", true,
       "forward (default) or reverse: build the chips in reverse (a "
       "determinism check)"},
      {"format", true, "text (default) or json"},
  };
  s.out_of_memory_hint =
      "its memory grows with the packets in flight (link bandwidth x hop "
      "latency / --packet-bytes per link, more where flows queue) and with "
      "the devices of --slice or --shape: raise --packet-bytes or use a "
      "smaller slice";
  s.description =
      "Per size: the simulated time, algorithm and bus bandwidth (nccl-tests "
      "definitions),\n"
      "the op's lower bound and the time's ratio to it, the busiest link and "
      "its utilisation,\n"
      "and the wall time. All output but the wall time is deterministic. Exit "
      "1 for an\n"
      "impossible request (unknown slice, groups that do not divide the "
      "slice, bytes that\n"
      "do not divide by the group, an algorithm the group cannot run).";
  s.run = &RunCollective;
  return s;
}

}  // namespace tpusim::tools
