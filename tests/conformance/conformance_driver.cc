// tests/conformance/conformance_driver.cc
//
// The C++ side of the differential suite for what has no JSON command:
// DeviceAssignment.build on a Topology, strategy.reduce, the ConfigProto of
// update_config_proto, and from_generator (C++ API only). One request per
// stdin line, one JSON answer per stdout line (in order), so the Python
// harness (run_conformance.py) sends every case to one process:
//
//   da MESH|COORDS|SHAPE|STRIDE|NUM_REPLICAS
//       MESH "2,2,1,2"; COORDS tasks ';'-separated, devices ' '-separated,
//       coordinates ','-separated; SHAPE / STRIDE "" (all ones) or "1,1,1,2".
//       -> {"ok": true, "assignment": [[[c...] per logical core] per replica],
//           "tasks": [[t...]...], "ordinals": [[d...]...]}
//   reduce OP|AXIS|DTYPE|VALUES
//       OP "SUM"/"MEAN"; AXIS "none" or an int; DTYPE "float32", "int64", ...;
//       VALUES replicas ';'-separated, each "SHAPE:v,v,..." with SHAPE
//       "2x3" ("" for a scalar).
//       -> {"ok": true, "dtype": "...", "shape": [...], "values": [...]}
//   config SLICE
//       -> {"ok": true, "hex": "<UpdateConfigProto(ConfigProto(), resolver(SLICE))>"}
//   generator START|STOP|WIDTH|BATCH
//       Dataset::FromGenerator yielding int64 [WIDTH] rows (i, i+1, ...) for i
//       in [START, STOP) (WIDTH 0: scalars i), then batch(BATCH) unless 0.
//       -> {"ok": true, "elements": [{"shape": [...], "values": [...]}, ...]}
//   any error -> {"ok": false, "code": "INVALID_ARGUMENT", "message": "..."}

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "strategy/cluster_resolver.h"
#include "strategy/config_proto.h"
#include "strategy/data/dataset.h"
#include "strategy/device_assignment.h"
#include "strategy/reduce.h"
#include "strategy/runtime/tensor.h"
#include "strategy/topology.h"
#include "strategy/values.h"
#include "tools/json_writer.h"

namespace tpusim::conformance {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using tools::JsonQuote;

absl::StatusOr<std::vector<int64_t>> Ints(absl::string_view text, char sep) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  for (absl::string_view p : absl::StrSplit(text, sep)) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(p, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("not an integer: ", p));
    }
    out.push_back(v);
  }
  return out;
}

std::vector<int> ToInt(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

std::string List(const std::vector<int>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

absl::StatusOr<std::string> DeviceAssignmentCase(absl::string_view args) {
  std::vector<std::string> f = absl::StrSplit(args, '|');
  if (f.size() != 5) return absl::InvalidArgumentError("da: need 5 fields");
  TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> mesh, Ints(f[0], ','));
  strategy::Topology::DeviceCoordinates coords;
  for (absl::string_view task : absl::StrSplit(f[1], ';')) {
    std::vector<std::vector<int>> devices;
    for (absl::string_view d : absl::StrSplit(task, ' ', absl::SkipEmpty())) {
      TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> c, Ints(d, ','));
      devices.push_back(ToInt(c));
    }
    coords.push_back(std::move(devices));
  }
  TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, Ints(f[2], ','));
  TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> stride, Ints(f[3], ','));
  int64_t replicas = 0;
  if (!absl::SimpleAtoi(f[4], &replicas)) {
    return absl::InvalidArgumentError("da: num_replicas");
  }
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::Topology topology,
      strategy::Topology::Create(ToInt(mesh), std::move(coords)));
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::DeviceAssignment da,
      strategy::DeviceAssignment::Build(topology, ToInt(shape), ToInt(stride),
                                        static_cast<int>(replicas)));
  std::vector<std::string> assignment, tasks, ordinals;
  for (int r = 0; r < da.num_replicas(); ++r) {
    std::vector<std::string> cores;
    std::vector<int> t, o;
    for (int k = 0; k < da.num_cores_per_replica(); ++k) {
      cores.push_back(List(da.coordinates(r, k)));
      TPUSIM_ASSIGN_OR_RETURN(int task, da.Task(r, k));
      TPUSIM_ASSIGN_OR_RETURN(int ordinal, da.TpuOrdinal(r, k));
      t.push_back(task);
      o.push_back(ordinal);
    }
    assignment.push_back(absl::StrCat("[", absl::StrJoin(cores, ", "), "]"));
    tasks.push_back(List(t));
    ordinals.push_back(List(o));
  }
  return absl::StrCat("{\"ok\": true, \"assignment\": [",
                      absl::StrJoin(assignment, ", "), "], \"tasks\": [",
                      absl::StrJoin(tasks, ", "), "], \"ordinals\": [",
                      absl::StrJoin(ordinals, ", "), "]}");
}

std::string TensorJson(const Tensor& t) {
  std::vector<std::string> values;
  const bool integer = runtime::IsInteger(t.dtype());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    values.push_back(integer ? absl::StrCat(t.AsInt64(i))
                             : tools::Json::Float64(t.AsDouble(i)).Dump());
  }
  std::vector<std::string> dims;
  for (int d = 0; d < t.shape().rank(); ++d)
    dims.push_back(absl::StrCat(t.shape().dim(d)));
  return absl::StrCat("\"dtype\": ", JsonQuote(runtime::DTypeName(t.dtype())),
                      ", \"shape\": [", absl::StrJoin(dims, ", "),
                      "], \"values\": [", absl::StrJoin(values, ", "), "]");
}

absl::StatusOr<Tensor> MakeTensor(DType dtype, Shape shape,
                                  const std::vector<double>& v) {
  switch (dtype) {
    case DType::kF32:
      return Tensor::FromVector<float>(shape,
                                       std::vector<float>(v.begin(), v.end()));
    case DType::kF64:
      return Tensor::FromVector<double>(shape, v);
    case DType::kI32:
      return Tensor::FromVector<int32_t>(
          shape, std::vector<int32_t>(v.begin(), v.end()));
    case DType::kI64:
      return Tensor::FromVector<int64_t>(
          shape, std::vector<int64_t>(v.begin(), v.end()));
    default:
      return absl::InvalidArgumentError("reduce: dtype not supported here");
  }
}

absl::StatusOr<std::string> ReduceCase(absl::string_view args) {
  std::vector<std::string> f = absl::StrSplit(args, '|');
  if (f.size() != 4) return absl::InvalidArgumentError("reduce: need 4 fields");
  TPUSIM_ASSIGN_OR_RETURN(strategy::ReduceOp op,
                          strategy::ReduceOpFromString(f[0]));
  strategy::ReduceAxis axis;
  if (f[1] != "none") {
    int64_t a = 0;
    if (!absl::SimpleAtoi(f[1], &a))
      return absl::InvalidArgumentError("reduce: axis");
    axis = strategy::ReduceAxis(static_cast<int>(a));
  }
  TPUSIM_ASSIGN_OR_RETURN(DType dtype, runtime::DTypeFromName(f[2]));
  std::vector<Tensor> parts;
  for (absl::string_view rep : absl::StrSplit(f[3], ';')) {
    std::vector<std::string> sv = absl::StrSplit(rep, ':');
    if (sv.size() != 2) return absl::InvalidArgumentError("reduce: value");
    TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> dims, Ints(sv[0], 'x'));
    std::vector<double> v;
    if (!sv[1].empty()) {
      for (absl::string_view p : absl::StrSplit(sv[1], ',')) {
        double d = 0;
        if (!absl::SimpleAtod(p, &d))
          return absl::InvalidArgumentError("reduce: number");
        v.push_back(d);
      }
    }
    TPUSIM_ASSIGN_OR_RETURN(Tensor t, MakeTensor(dtype, Shape(dims), v));
    parts.push_back(std::move(t));
  }
  const int n = static_cast<int>(parts.size());
  strategy::Value value(strategy::PerReplica<Tensor>(std::move(parts)));
  TPUSIM_ASSIGN_OR_RETURN(strategy::Value out,
                          strategy::ReduceOnHost(op, value, axis, n));
  if (!out.is_tensor())
    return absl::InternalError("reduce: the result is not a tensor");
  return absl::StrCat("{\"ok\": true, ", TensorJson(out.tensor()), "}");
}

absl::StatusOr<std::string> ConfigCase(absl::string_view slice) {
  TPUSIM_ASSIGN_OR_RETURN(strategy::TPUClusterResolver resolver,
                          strategy::TPUClusterResolver::Create(slice));
  tensorflow::ConfigProto config;
  config.set_isolate_session_state(false);
  const std::string bytes =
      strategy::UpdateConfigProto(config, resolver).SerializeAsString();
  std::string hex;
  for (unsigned char c : bytes) {
    absl::StrAppend(&hex, absl::string_view("0123456789abcdef" + (c >> 4), 1),
                    absl::string_view("0123456789abcdef" + (c & 15), 1));
  }
  return absl::StrCat("{\"ok\": true, \"hex\": \"", hex, "\"}");
}

absl::StatusOr<std::string> GeneratorCase(absl::string_view args) {
  TPUSIM_ASSIGN_OR_RETURN(std::vector<int64_t> f, Ints(args, '|'));
  if (f.size() != 4) return absl::InvalidArgumentError("generator: 4 fields");
  const int64_t start = f[0], stop = f[1], width = f[2], batch = f[3];
  data::ElementSpec spec(runtime::TensorSpec{
      DType::kI64, width == 0 ? Shape() : Shape({width})});
  data::Dataset ds = data::Dataset::FromGenerator(
      [start, stop, width]() -> data::GeneratorFn {
        auto i = std::make_shared<int64_t>(start);
        return [i, stop, width]() -> absl::StatusOr<std::optional<data::Element>> {
          if (*i >= stop) return std::optional<data::Element>();
          const int64_t v = (*i)++;
          if (width == 0) return std::optional<data::Element>(Tensor::Scalar<int64_t>(v));
          std::vector<int64_t> row;
          for (int64_t j = 0; j < width; ++j) row.push_back(v + j);
          return std::optional<data::Element>(
              Tensor::FromVector<int64_t>(Shape({width}), row));
        };
      },
      spec);
  if (batch > 0) ds = ds.Batch(batch);
  TPUSIM_ASSIGN_OR_RETURN(std::vector<data::Element> all, ds.Collect());
  std::vector<std::string> out;
  for (const data::Element& e : all) {
    out.push_back(absl::StrCat("{", TensorJson(e.leaf()), "}"));
  }
  return absl::StrCat("{\"ok\": true, \"elements\": [", absl::StrJoin(out, ", "),
                      "]}");
}

std::string Answer(const std::string& line) {
  const size_t sp = line.find(' ');
  const std::string cmd = line.substr(0, sp);
  const std::string args = sp == std::string::npos ? "" : line.substr(sp + 1);
  absl::StatusOr<std::string> r =
      cmd == "da"          ? DeviceAssignmentCase(args)
      : cmd == "reduce"    ? ReduceCase(args)
      : cmd == "config"    ? ConfigCase(args)
      : cmd == "generator" ? GeneratorCase(args)
                           : absl::StatusOr<std::string>(absl::InvalidArgumentError(
                                 absl::StrCat("unknown request: ", cmd)));
  if (r.ok()) return *r;
  return absl::StrCat("{\"ok\": false, \"code\": ",
                      JsonQuote(absl::StatusCodeToString(r.status().code())),
                      ", \"message\": ", JsonQuote(r.status().message()), "}");
}

}  // namespace
}  // namespace tpusim::conformance

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::cout << tpusim::conformance::Answer(line) << "\n";
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}
