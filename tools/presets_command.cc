#include "tools/presets_command.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "sim/chip/chip_preset.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

using sim::ChipPreset;

std::string Opt(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%g", *v) : "-";
}

std::string MaxSlice(const ChipPreset& p) {
  const auto& s = p.generation->max_slice;
  return p.generation->torus_rank == 3
             ? absl::StrCat(s[0], "x", s[1], "x", s[2])
             : absl::StrCat(s[0], "x", s[1]);
}

// One preset field: its label and unit, the text people read and the value
// machines read (a number, a string, or null where the sheet has none).
struct Field {
  std::string key;  // the JSON key: snake_case, its unit as a suffix
  std::string label;
  std::string unit;
  std::string text;
  Json json;
};

// `text` overrides the default "%g" rendering for people.
Field Number(std::string key, std::string label, std::string unit, double v,
             std::string text = "") {
  if (text.empty()) text = absl::StrFormat("%g", v);
  // Whole numbers (counts, 900 GB/s) are JSON integers, the rest the shortest
  // float text.
  const bool whole = v == std::trunc(v) && std::abs(v) < 1e15;
  return {std::move(key), std::move(label), std::move(unit), std::move(text),
          whole ? Json::Int(static_cast<int64_t>(v)) : Json::Float64(v)};
}
Field Optional(std::string key, std::string label, std::string unit,
               const std::optional<double>& v) {
  if (v.has_value()) {
    return Number(std::move(key), std::move(label), std::move(unit), *v);
  }
  return {std::move(key), std::move(label), std::move(unit), "-", Json::Null()};
}
Field Text(std::string key, std::string label, std::string unit,
           std::string text) {
  Json json = Json::String(text);
  return {std::move(key), std::move(label), std::move(unit), std::move(text),
          std::move(json)};
}

std::vector<Field> Fields(const ChipPreset& p) {
  const auto* g = p.generation;
  return {
      Number("tensorcores_per_chip", "TensorCores per chip", "", g->cores_per_chip),
      Number("devices_per_chip", "devices per chip", "", g->devices_per_chip),
      Number("mxus_per_core", "MXUs per core", "", p.mxus_per_core),
      Text("mxu_size", "MXU size", "", absl::StrCat(p.mxu_dim, "x", p.mxu_dim)),
      Number("clock_ghz", "clock", "GHz", p.clock_ghz),
      Number("peak_bf16_datasheet_tflops_per_chip", "peak bf16 (datasheet)", "TFLOPS/chip", p.datasheet_bf16_tflops),
      Number("peak_bf16_mxu_tflops_per_chip", "peak bf16 (MXU identity)", "TFLOPS/chip",
             p.PeakBf16FlopsPerSecond() / 1e12,
             absl::StrFormat("%.1f", p.PeakBf16FlopsPerSecond() / 1e12)),
      Optional("int8_tops_per_chip", "int8", "TOPS/chip", p.int8_tops),
      Number("hbm_gib_per_chip", "HBM", "GiB/chip", p.hbm_capacity.gib()),
      Number("hbm_gbps_per_chip", "HBM bandwidth", "GB/s/chip", p.hbm_gbps),
      Number("ici_ports", "ICI ports", "", p.ici_ports),
      Number("ici_link_raw_gbps_per_direction", "ICI link (raw)", "GB/s/dir", p.ici_link_gbps),
      Optional("ici_link_achieved_gbps_per_direction", "ICI link (achieved)", "GB/s/dir", p.ici_link_achieved_gbps),
      Number("ici_hop_latency_us", "ICI hop latency", "us", p.ici_hop_latency.microseconds()),
      Optional("on_chip_core_gbps_per_direction", "on-chip core path", "GB/s/dir", p.on_chip_core_gbps),
      Number("on_chip_core_latency_us", "on-chip core latency", "us",
             p.on_chip_core_latency.microseconds()),
      Text("torus", "torus", "", absl::StrCat(g->torus_rank, "-D")),
      Text("max_slice_chips", "max slice", "chips", MaxSlice(p)),
      Number("chips_per_host", "chips per host", "", g->chips_per_host),
      Optional("pcie_gbps_per_chip", "PCIe", "GB/s/chip", p.pcie_gbps),
      Optional("dcn_gbps_per_chip", "DCN", "GB/s/chip", p.dcn_gbps),
      Text("vector_unit_lanes_x_sublanes", "vector unit", "lanes x sublanes",
           absl::StrCat(p.vpu_lanes, "x", p.vpu_sublanes)),
  };
}

void PrintTable(std::ostream& out) {
  out << absl::StrFormat(
      "%-5s %5s %7s %7s %6s %9s %8s %7s %8s %5s %9s %6s %9s %5s %8s %8s\n",
      "gen", "cores", "MXU", "clock", "bf16", "int8", "HBM", "HBM", "ICI",
      "links", "link", "torus", "max", "chips", "PCIe", "DCN");
  out << absl::StrFormat(
      "%-5s %5s %7s %7s %6s %9s %8s %7s %8s %5s %9s %6s %9s %5s %8s %8s\n", "",
      "/chip", "/core", "GHz", "TF", "TOPS", "GiB", "GB/s", "hop us", "/chip",
      "GB/s/dir", "", "slice", "/host", "GB/s", "GB/s");
  for (const ChipPreset& p : sim::ChipPresets()) {
    const auto* g = p.generation;
    out << absl::StrFormat(
        "%-5s %5d %7s %7g %6g %9s %8g %7g %8g %5d %9g %6s %9s %5d %8s %8s\n",
        p.name(), g->cores_per_chip,
        absl::StrCat(p.mxus_per_core, "x", p.mxu_dim), p.clock_ghz,
        p.datasheet_bf16_tflops, Opt(p.int8_tops), p.hbm_capacity.gib(),
        p.hbm_gbps, p.ici_hop_latency.microseconds(), p.ici_ports,
        p.ici_link_gbps, absl::StrCat(g->torus_rank, "-D"), MaxSlice(p),
        g->chips_per_host, Opt(p.pcie_gbps), Opt(p.dcn_gbps));
  }
  out << "\nNumbers per chip; sources and chosen values for conflicts: "
         "sim/chip/chip_preset.cc. '-' = not published.\n";
}

// One JSON object per preset: "name", "slice_prefix" and one snake_case key
// per field, its unit as a suffix (Field::key), sorted (the project's JSON
// convention, tools/json_writer.h).
void PrintJson(absl::Span<const ChipPreset* const> presets, std::ostream& out) {
  std::vector<Json> items;
  for (const ChipPreset* p : presets) {
    std::map<std::string, Json> members = {
        {"name", Json::String(std::string(p->name()))},
        {"slice_prefix", Json::String(p->generation->slice_prefix)}};
    for (Field& f : Fields(*p)) members[f.key] = std::move(f.json);
    items.push_back(Json::Object(std::move(members)));
  }
  out << Json::Array(std::move(items)).Dump() << "\n";
}

absl::Status RunPresets(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=", format, " is not allowed; expected text or json"));
  }
  std::vector<const ChipPreset*> selected;
  if (args.positional().empty()) {
    for (const ChipPreset& p : sim::ChipPresets()) selected.push_back(&p);
  } else {
    TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* p,
                            sim::FindChipPreset(args.positional()[0]));
    selected.push_back(p);
  }
  if (format == "json") {
    PrintJson(selected, out);
  } else if (args.positional().empty()) {
    PrintTable(out);
  } else {
    out << "preset " << selected[0]->name() << "\n";
    for (const auto& f : Fields(*selected[0])) {
      out << absl::StrFormat("  %-26s %-12s %s\n", f.label, f.text, f.unit);
    }
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand PresetsCommand() {
  Subcommand s;
  s.name = "presets";
  s.summary =
      "print the TPU chip presets (v2, v3, v4, v5e, v5p, v6e) with units";
  s.usage = "tpusim presets [NAME] [--format=text|json]";
  s.flags = {{"format", true, "text (default) or json"}};
  s.min_positional = 0;
  s.max_positional = 1;
  s.description =
      "Without NAME, a table of every preset; with NAME, every field of that "
      "preset.\n"
      "Numbers come from shared/spec/tpu-hardware-reference.md; each cites its "
      "entry in\n"
      "sim/chip/chip_preset.cc.";
  s.run = &RunPresets;
  return s;
}

}  // namespace tpusim::tools
