#include "tools/topo_command.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "sim/net/topology.h"
#include "strategy/topology.h"

namespace tpusim::tools {
namespace {

using strategy::DeviceAssignment;

absl::Status SpecError(absl::string_view spec, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--device-assignment=", spec, ": ", what));
}

// Splits "a=1,b=[2,3]" at the commas outside brackets.
std::vector<std::string> SplitTopLevel(absl::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  parts.push_back(std::move(current));
  return parts;
}

absl::StatusOr<std::vector<int>> ParseDims(absl::string_view spec,
                                           absl::string_view key,
                                           absl::string_view text) {
  std::vector<int> dims;
  for (absl::string_view part : absl::StrSplit(text, 'x')) {
    int v = 0;
    if (!ParseExactInt(part, &v)) {
      return SpecError(spec, absl::StrCat(key, "=", text,
                                          " must be integers joined by 'x'"));
    }
    dims.push_back(v);
  }
  return dims;
}

// A nested list of integers of exactly three levels: [[[1,2],[3,4]],[[5,6]]].
class CoreListParser {
 public:
  CoreListParser(absl::string_view spec, absl::string_view text)
      : spec_(spec), text_(text) {}

  absl::StatusOr<DeviceAssignment::CoreAssignment> Parse() {
    DeviceAssignment::CoreAssignment out;
    TPUSIM_RETURN_IF_ERROR(List([&]() -> absl::Status {
      std::vector<std::vector<int>> replica;
      TPUSIM_RETURN_IF_ERROR(List([&]() -> absl::Status {
        std::vector<int> coords;
        TPUSIM_RETURN_IF_ERROR(List([&]() -> absl::Status {
          TPUSIM_ASSIGN_OR_RETURN(int v, Int());
          coords.push_back(v);
          return absl::OkStatus();
        }));
        replica.push_back(std::move(coords));
        return absl::OkStatus();
      }));
      out.push_back(std::move(replica));
      return absl::OkStatus();
    }));
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the closing ']'");
    return out;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return SpecError(spec_, absl::StrCat("cores: ", what, " at offset ", pos_,
                                         " (want [[[x,y,...],...],...])"));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  template <typename F>
  absl::Status List(F element) {
    if (!Eat('[')) return Error("expected '['");
    if (Eat(']')) return absl::OkStatus();
    do {
      TPUSIM_RETURN_IF_ERROR(element());
    } while (Eat(','));
    if (!Eat(']')) return Error("expected ',' or ']'");
    return absl::OkStatus();
  }
  absl::StatusOr<int> Int() {
    SkipSpace();
    size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
    int v = 0;
    if (!absl::SimpleAtoi(text_.substr(pos_, end - pos_), &v)) {
      return Error("expected an integer");
    }
    pos_ = end;
    return v;
  }

  absl::string_view spec_;
  absl::string_view text_;
  size_t pos_ = 0;
};

std::string Join(const std::vector<int>& v, absl::string_view sep) {
  return absl::StrJoin(v, sep);
}

std::string ChipCoordText(const std::array<int, 3>& c, bool three_d) {
  return three_d ? absl::StrCat("(", c[0], ",", c[1], ",", c[2], ")")
                 : absl::StrCat("(", c[0], ",", c[1], ")");
}

struct TopoView {
  const runtime::SliceLayout* layout = nullptr;
  std::array<bool, 3> wraps = {false, false, false};
  bool three_d = false;
  Placement placement;
  std::string assignment_text;
  // [chip] -> host task; [chip][core] -> device id.
  std::vector<int> chip_task;
  std::vector<std::vector<int>> chip_devices;
};

absl::StatusOr<TopoView> BuildView(const runtime::SliceLayout& layout,
                                   const std::string& spec) {
  TopoView v;
  v.layout = &layout;
  TPUSIM_ASSIGN_OR_RETURN(
      sim::net::Topology net,
      sim::net::Topology::Create(layout, sim::net::WrapMode::kGeneration));
  for (int d = 0; d < 3; ++d) v.wraps[d] = net.wraps(d);
  v.three_d = layout.generation->torus_rank == 3;
  std::optional<DeviceAssignment> da;
  if (!spec.empty()) {
    TPUSIM_ASSIGN_OR_RETURN(da, ParseDeviceAssignmentSpec(layout, spec));
  }
  TPUSIM_ASSIGN_OR_RETURN(v.placement,
                          PlaceReplicas(layout, da ? &*da : nullptr));
  v.assignment_text =
      spec.empty()
          ? absl::StrCat("default (one core per replica, replica r on device "
                         "r), ",
                         v.placement.num_replicas, " replicas")
          : absl::StrCat(spec, ": ", v.placement.num_replicas, " replicas x ",
                         v.placement.cores_per_replica,
                         v.placement.cores_per_replica == 1 ? " core" : " cores",
                         " per replica");
  v.chip_task.assign(layout.num_chips, -1);
  v.chip_devices.assign(layout.num_chips,
                        std::vector<int>(layout.devices_per_chip, -1));
  for (const runtime::DeviceDescription& d : layout.devices) {
    v.chip_task[d.chip] = d.task;
    const int core = d.coords.back();
    v.chip_devices[d.chip][core] = d.id;
  }
  return v;
}

std::string Header(const TopoView& v) {
  const runtime::SliceLayout& l = *v.layout;
  const char* axes = "xyz";
  std::vector<std::string> wrap;
  for (int d = 0; d < (v.three_d ? 3 : 2); ++d) {
    wrap.push_back(absl::StrCat(std::string(1, axes[d]), " ",
                                v.wraps[d] ? "yes" : "no"));
  }
  const std::string mesh =
      v.three_d ? absl::StrCat(l.chip_mesh[0], "x", l.chip_mesh[1], "x",
                               l.chip_mesh[2])
                : absl::StrCat(l.chip_mesh[0], "x", l.chip_mesh[1]);
  return absl::StrCat(
      "slice ", l.name, ": TPU ", l.generation->name, ", ", mesh, " chips, ",
      v.three_d ? "3-D" : "2-D", " torus (wraparound: ",
      absl::StrJoin(wrap, ", "), "), ", l.num_hosts,
      l.num_hosts == 1 ? " host, " : " hosts, ", l.num_devices(),
      " devices (", l.devices_per_chip, " per chip)\n",
      "device assignment: ", v.assignment_text, "\n");
}

std::string RenderText(const TopoView& v) {
  const runtime::SliceLayout& l = *v.layout;
  std::string out = Header(v);
  // Cell text per chip: "h<task> <label per core>".
  std::vector<std::string> cell(l.num_chips);
  size_t width = 0;
  for (int c = 0; c < l.num_chips; ++c) {
    std::vector<std::string> parts = {absl::StrCat("h", v.chip_task[c])};
    for (int id : v.chip_devices[c]) {
      const std::string& label = v.placement.device_label[id];
      parts.push_back(label.empty() ? "-" : label);
    }
    cell[c] = absl::StrCat("[", absl::StrJoin(parts, " "), "]");
    width = std::max(width, cell[c].size());
  }
  width = std::max<size_t>(width, 5);
  for (int z = 0; z < l.chip_mesh[2]; ++z) {
    absl::StrAppend(&out, "\n");
    if (v.three_d) absl::StrAppend(&out, "plane z=", z, "\n");
    std::string row = absl::StrFormat("%-6s", "");
    for (int x = 0; x < l.chip_mesh[0]; ++x) {
      absl::StrAppend(&row, absl::StrFormat(" %-*s", static_cast<int>(width),
                                            absl::StrCat("x=", x)));
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(row), "\n");
    for (int y = 0; y < l.chip_mesh[1]; ++y) {
      row = absl::StrFormat("%-6s", absl::StrCat("y=", y));
      for (int x = 0; x < l.chip_mesh[0]; ++x) {
        absl::StrAppend(&row,
                        absl::StrFormat(" %-*s", static_cast<int>(width),
                                        cell[l.ChipId({x, y, z})]));
      }
      absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(row), "\n");
    }
  }
  absl::StrAppend(&out, "\nreplica core device task TPU coords\n");
  for (int r = 0; r < v.placement.num_replicas; ++r) {
    for (int k = 0; k < v.placement.cores_per_replica; ++k) {
      const runtime::DeviceDescription& d =
          l.devices[v.placement.replica_devices[r][k]];
      absl::StrAppend(&out,
                      absl::StrFormat("%7d %4d %6d %4d %3d (%s)\n", r, k, d.id,
                                      d.task, d.ordinal, Join(d.coords, ",")));
    }
  }
  return out;
}

// A fixed palette (host colours repeat every 12 hosts).
constexpr const char* kHostColours[] = {
    "#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd",
    "#d0e0e3", "#ead1dc", "#c9daf8", "#b6d7a8", "#ffe599", "#ea9999"};

std::string RenderSvg(const TopoView& v) {
  const runtime::SliceLayout& l = *v.layout;
  const int cw = 120, ch = 34 + 14 * l.devices_per_chip, gap = 30, margin = 40;
  const int plane_w = l.chip_mesh[0] * (cw + gap) + gap;
  const int plane_h = l.chip_mesh[1] * (ch + gap) + gap + 20;
  const int planes_per_row = std::min(4, l.chip_mesh[2]);
  const int plane_rows = (l.chip_mesh[2] + planes_per_row - 1) / planes_per_row;
  const int width = margin * 2 + planes_per_row * plane_w;
  const int height = margin * 2 + 40 + plane_rows * plane_h;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n",
      width, height, width, height);
  absl::StrAppend(&out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  std::vector<std::string> header = absl::StrSplit(Header(v), '\n');
  for (int i = 0; i < 2; ++i) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%d\" y=\"%d\">%s</text>\n",
                                          margin, margin + 14 * i, header[i]));
  }
  for (int z = 0; z < l.chip_mesh[2]; ++z) {
    const int ox = margin + (z % planes_per_row) * plane_w;
    const int oy = margin + 40 + (z / planes_per_row) * plane_h;
    if (v.three_d) {
      absl::StrAppend(&out,
                      absl::StrFormat("<text x=\"%d\" y=\"%d\" "
                                      "font-weight=\"bold\">z=%d</text>\n",
                                      ox, oy + 12, z));
    }
    auto cx = [&](int x) { return ox + gap + x * (cw + gap); };
    auto cy = [&](int y) { return oy + 20 + gap + y * (ch + gap); };
    // Links: x neighbours, y neighbours; wraparound as dashed stubs.
    for (int y = 0; y < l.chip_mesh[1]; ++y) {
      for (int x = 0; x < l.chip_mesh[0]; ++x) {
        if (x + 1 < l.chip_mesh[0]) {
          absl::StrAppend(&out, absl::StrFormat(
              "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#666\"/>\n",
              cx(x) + cw, cy(y) + ch / 2, cx(x + 1), cy(y) + ch / 2));
        }
        if (y + 1 < l.chip_mesh[1]) {
          absl::StrAppend(&out, absl::StrFormat(
              "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#666\"/>\n",
              cx(x) + cw / 2, cy(y) + ch, cx(x) + cw / 2, cy(y + 1)));
        }
      }
    }
    if (v.wraps[0]) {
      for (int y = 0; y < l.chip_mesh[1]; ++y) {
        absl::StrAppend(&out, absl::StrFormat(
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
            "stroke-dasharray=\"4 3\"><title>x wraparound</title></line>\n",
            cx(0) - gap + 4, cy(y) + ch / 2, cx(0), cy(y) + ch / 2));
        absl::StrAppend(&out, absl::StrFormat(
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
            "stroke-dasharray=\"4 3\"><title>x wraparound</title></line>\n",
            cx(l.chip_mesh[0] - 1) + cw, cy(y) + ch / 2,
            cx(l.chip_mesh[0] - 1) + cw + gap - 4, cy(y) + ch / 2));
      }
    }
    if (v.wraps[1]) {
      for (int x = 0; x < l.chip_mesh[0]; ++x) {
        absl::StrAppend(&out, absl::StrFormat(
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
            "stroke-dasharray=\"4 3\"><title>y wraparound</title></line>\n",
            cx(x) + cw / 2, cy(0) - gap + 4, cx(x) + cw / 2, cy(0)));
        absl::StrAppend(&out, absl::StrFormat(
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
            "stroke-dasharray=\"4 3\"><title>y wraparound</title></line>\n",
            cx(x) + cw / 2, cy(l.chip_mesh[1] - 1) + ch, cx(x) + cw / 2,
            cy(l.chip_mesh[1] - 1) + ch + gap - 4));
      }
    }
    for (int y = 0; y < l.chip_mesh[1]; ++y) {
      for (int x = 0; x < l.chip_mesh[0]; ++x) {
        const int c = l.ChipId({x, y, z});
        const int task = v.chip_task[c];
        absl::StrAppend(&out, absl::StrFormat(
            "<g><title>chip %d %s host %d</title>"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" "
            "fill=\"%s\" stroke=\"#333\"/>\n",
            c, ChipCoordText({x, y, z}, v.three_d), task, cx(x), cy(y), cw,
            ch, kHostColours[task % 12]));
        absl::StrAppend(&out, absl::StrFormat(
            "<text x=\"%d\" y=\"%d\">%s h%d</text>\n", cx(x) + 4, cy(y) + 13,
            ChipCoordText({x, y, z}, v.three_d), task));
        for (int k = 0; k < l.devices_per_chip; ++k) {
          const int id = v.chip_devices[c][k];
          const std::string& label = v.placement.device_label[id];
          absl::StrAppend(&out, absl::StrFormat(
              "<text x=\"%d\" y=\"%d\">core %d: %s</text>\n", cx(x) + 4,
              cy(y) + 27 + 14 * k, k, label.empty() ? "-" : label));
        }
        absl::StrAppend(&out, "</g>\n");
      }
    }
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

absl::Status RunTopo(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "svg") {
    return UsageError(
        absl::StrCat("--format=", format, " must be text or svg"));
  }
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(args.positional()[0]));
  TPUSIM_ASSIGN_OR_RETURN(TopoView view,
                          BuildView(layout, args.Get("device-assignment")));
  out << (format == "svg" ? RenderSvg(view) : RenderText(view));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceAssignment> ParseDeviceAssignmentSpec(
    const runtime::SliceLayout& layout, absl::string_view spec) {
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::Topology topology,
      strategy::Topology::FromDevices(layout.mesh_shape, layout.devices));
  std::vector<int> shape, stride;
  int replicas = 1;
  bool has_shape = false, has_replicas = false, has_stride = false;
  std::set<std::string> seen;
  std::optional<DeviceAssignment::CoreAssignment> cores;
  for (const std::string& part : SplitTopLevel(spec)) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    const std::string& key = kv.first;
    const std::string& value = kv.second;
    if (part.find('=') == std::string::npos) {
      return SpecError(spec, absl::StrCat("'", part, "' is not key=value"));
    }
    if (!seen.insert(key).second) {
      return SpecError(spec, absl::StrCat("key '", key, "' is given twice"));
    }
    if (key == "shape") {
      TPUSIM_ASSIGN_OR_RETURN(shape, ParseDims(spec, key, value));
      has_shape = true;
    } else if (key == "stride") {
      TPUSIM_ASSIGN_OR_RETURN(stride, ParseDims(spec, key, value));
      has_stride = true;
    } else if (key == "replicas") {
      if (!ParseExactInt(value, &replicas) || replicas < 1) {
        return SpecError(spec, absl::StrCat("replicas=", value,
                                            " must be an integer >= 1"));
      }
      has_replicas = true;
    } else if (key == "cores") {
      TPUSIM_ASSIGN_OR_RETURN(cores, CoreListParser(spec, value).Parse());
    } else {
      return SpecError(spec, absl::StrCat("unknown key '", key,
                                          "' (allowed: shape, stride, "
                                          "replicas, cores)"));
    }
  }
  absl::StatusOr<DeviceAssignment> da;
  if (cores.has_value()) {
    if (has_shape || has_stride || has_replicas) {
      return SpecError(spec,
                       "cores= cannot be combined with shape, stride or "
                       "replicas");
    }
    da = DeviceAssignment::Create(std::move(topology), std::move(*cores));
  } else {
    if (!has_shape) {
      return SpecError(spec, "needs shape=... or cores=[...]");
    }
    da = DeviceAssignment::Build(topology, shape, stride, replicas);
  }
  if (!da.ok()) {
    return absl::Status(da.status().code(),
                        absl::StrCat("--device-assignment=", spec, ": ",
                                     da.status().message()));
  }
  return da;
}

absl::StatusOr<Placement> PlaceReplicas(const runtime::SliceLayout& layout,
                                        const DeviceAssignment* assignment) {
  Placement p;
  p.device_label.assign(layout.num_devices(), "");
  if (assignment == nullptr) {
    p.num_replicas = layout.num_devices();
    for (int id = 0; id < layout.num_devices(); ++id) {
      p.replica_devices.push_back({id});
      p.device_label[id] = absl::StrCat("r", id);
    }
    return p;
  }
  p.num_replicas = assignment->num_replicas();
  p.cores_per_replica = assignment->num_cores_per_replica();
  TPUSIM_ASSIGN_OR_RETURN(p.replica_devices,
                          assignment->ReplicaDeviceIds(layout.devices));
  for (int r = 0; r < p.num_replicas; ++r) {
    for (int k = 0; k < p.cores_per_replica; ++k) {
      const int id = p.replica_devices[r][k];
      if (!p.device_label[id].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device ", id, " (coordinates ",
            absl::StrJoin(layout.devices[id].coords, ","), ") is assigned twice: ",
            p.device_label[id], " and replica ", r, " logical core ", k,
            "; a TensorCore runs one logical core of one replica"));
      }
      p.device_label[id] = p.cores_per_replica == 1
                               ? absl::StrCat("r", r)
                               : absl::StrCat("r", r, ".", k);
    }
  }
  return p;
}

Subcommand TopoCommand() {
  Subcommand s;
  s.name = "topo";
  s.summary = "draw a slice's torus, its hosts and where each replica sits";
  s.usage =
      "tpusim topo SLICE [--device-assignment=SPEC] [--format=text|svg]";
  s.flags = {
      {"device-assignment", true,
       "shape=AxBxC[,stride=AxBxC][,replicas=N] (DeviceAssignment.build) or "
       "cores=[[[x,y,c],...],...] (one list of coordinates per replica)"},
      {"format", true, "text (default) or svg"},
  };
  s.min_positional = 1;
  s.max_positional = 1;
  s.run = &RunTopo;
  s.description =
      "Each chip shows its host (h<task>) and, per TensorCore, the replica "
      "(r<replica>, or r<replica>.<logical core> with several cores per "
      "replica) placed there; '-' is an unused core. The table below lists "
      "every replica's cores with device id, task, TPU ordinal and "
      "coordinates. Without --device-assignment the placement is "
      "TPUStrategy's default (replica r on device r). Wraparound follows the "
      "generation's rules (tpusim collective --wrap explains them).";
  return s;
}

}  // namespace tpusim::tools
