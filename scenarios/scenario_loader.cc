#include "scenarios/scenario_loader.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "scenarios/field_override.h"
#include "strategy/data/dataset.h"
#include "strategy/data/zlib_stream.h"
#include "strategy/runtime/slice.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::scenarios {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::TextFormat;

// Collects the first syntax error of the text-format parser with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line;
      column_ = column;
      message_ = message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  bool has_error() const { return has_error_; }

  // protobuf reports an unknown enum value at the token AFTER the value (often
  // the next line); move the position back to the value itself so that the
  // error names its line. The same holds for an unknown field name, reported
  // after the name.
  void LocateOffendingToken(absl::string_view text) {
    std::string value;
    for (absl::string_view prefix :
         {absl::string_view("Unknown enumeration value of \""),
          absl::string_view("has no field named \"")}) {
      const size_t start = message_.find(std::string(prefix));
      if (start == std::string::npos) continue;
      const size_t begin = start + prefix.size();
      const size_t end = message_.find('"', begin);
      if (end != std::string::npos) value = message_.substr(begin, end - begin);
      break;
    }
    if (value.empty()) return;
    // Offset of (line_, column_) in the text (columns count tabs as 8 in
    // protobuf's tokenizer; scenario files use spaces, and a tab only makes the
    // search start a little later).
    size_t offset = 0;
    for (int l = 0; l < line_ && offset < text.size(); ++l) {
      const size_t nl = text.find('\n', offset);
      if (nl == absl::string_view::npos) break;
      offset = nl + 1;
    }
    offset = std::min(text.size(), offset + static_cast<size_t>(column_));
    const size_t at = text.substr(0, offset).rfind(value);
    if (at == absl::string_view::npos) return;
    line_ = 0;
    size_t line_start = 0;
    for (size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line_;
        line_start = i + 1;
      }
    }
    column_ = static_cast<int>(at - line_start);
  }
  // "file:LINE:COL: message", 1-based like compilers print.
  std::string Describe(absl::string_view source) const {
    return absl::StrCat(source, ":", line_ + 1, ":", column_ + 1, ": ",
                        message_);
  }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

// A position in the scenario: the message being validated, where it was
// written, and its field path ("pipeline[2].batch").
class Cursor {
 public:
  Cursor(const Message& msg, const TextFormat::ParseInfoTree* tree,
         std::string path, int line, const std::string* source)
      : msg_(&msg),
        tree_(tree),
        path_(std::move(path)),
        line_(line),
        source_(source) {}

  // The nested message `field` (index -1 for a singular field).
  Cursor Child(const Message& child, absl::string_view field,
               int index = -1) const {
    const TextFormat::ParseInfoTree* tree = nullptr;
    if (const FieldDescriptor* fd = Field(field);
        fd != nullptr && tree_ != nullptr) {
      tree = tree_->GetTreeForNested(fd, index);
    }
    return Cursor(child, tree, Path(field, index), Line(field, index), source_);
  }

  // "pipeline[2].batch.batch_size" (index >= 0 appends "[index]").
  std::string Path(absl::string_view field, int index = -1) const {
    std::string p =
        path_.empty() ? std::string(field) : absl::StrCat(path_, ".", field);
    if (index >= 0) absl::StrAppend(&p, "[", index, "]");
    return p;
  }
  const std::string& path() const { return path_; }

  // InvalidArgument "source:LINE: path=value: problem" (no "=value" when value
  // is empty).
  absl::Status Error(absl::string_view field, int index,
                     absl::string_view value, absl::string_view problem) const {
    const int line = Line(field, index);
    const std::string where = line > 0 ? absl::StrCat(*source_, ":", line, ": ")
                                       : absl::StrCat(*source_, ": ");
    const std::string path = field.empty() ? path_ : Path(field, index);
    return absl::InvalidArgumentError(
        absl::StrCat(where, path, value.empty() ? "" : absl::StrCat("=", value),
                     ": ", problem));
  }
  absl::Status Error(absl::string_view field, absl::string_view value,
                     absl::string_view problem) const {
    return Error(field, -1, value, problem);
  }
  // An error about the message itself, with an optional value.
  absl::Status ErrorWithValue(absl::string_view value,
                              absl::string_view problem) const {
    const std::string where = line_ > 0
                                  ? absl::StrCat(*source_, ":", line_, ": ")
                                  : absl::StrCat(*source_, ": ");
    return absl::InvalidArgumentError(absl::StrCat(
        where, path_.empty() ? "scenario" : path_,
        value.empty() ? "" : absl::StrCat("=", value), ": ", problem));
  }
  // This message's line (0 = unknown).
  int line() const { return line_; }
  // The line of `field` (see Line()).
  int LineOf(absl::string_view field, int index) const {
    return Line(field, index);
  }
  // An error about the message itself (no field).
  absl::Status Error(absl::string_view problem) const {
    const std::string where = line_ > 0
                                  ? absl::StrCat(*source_, ":", line_, ": ")
                                  : absl::StrCat(*source_, ": ");
    return absl::InvalidArgumentError(
        absl::StrCat(where, path_.empty() ? "scenario" : path_, ": ", problem));
  }

 private:
  const FieldDescriptor* Field(absl::string_view field) const {
    return msg_->GetDescriptor()->FindFieldByName(std::string(field));
  }
  // 1-based line of `field` when it was written, else this message's line (0 =
  // unknown).
  int Line(absl::string_view field, int index) const {
    if (const FieldDescriptor* fd = Field(field);
        fd != nullptr && tree_ != nullptr) {
      int i = index;
      if (fd->is_repeated() && i < 0) i = 0;
      if (!fd->is_repeated()) i = -1;
      const TextFormat::ParseLocation loc = tree_->GetLocation(fd, i);
      if (loc.line >= 0) return loc.line + 1;
    }
    return line_;
  }

  const Message* msg_;
  const TextFormat::ParseInfoTree* tree_;
  std::string path_;
  int line_;
  const std::string* source_;
};

bool IsSource(const Stage& s) {
  switch (s.kind_case()) {
    case Stage::kRange:
    case Stage::kFromTensorSlices:
    case Stage::kFromTensors:
    case Stage::kListFiles:
    case Stage::kTfrecord:
    case Stage::kTextLine:
    case Stage::kFixedLength:
    case Stage::kZip:
      return true;
    default:
      return false;
  }
}

bool IsReader(const Stage& s) {
  return s.kind_case() == Stage::kTfrecord ||
         s.kind_case() == Stage::kTextLine ||
         s.kind_case() == Stage::kFixedLength;
}

// The name of the field set in a stage ("range", "batch", ...).
std::string StageName(const Stage& s) {
  const google::protobuf::OneofDescriptor* oneof =
      Stage::descriptor()->FindOneofByName("kind");
  const FieldDescriptor* fd =
      Stage::GetReflection()->GetOneofFieldDescriptor(s, oneof);
  return fd == nullptr ? "" : fd->name();
}

std::string AllStageNames() {
  std::vector<std::string> names;
  const google::protobuf::OneofDescriptor* oneof =
      Stage::descriptor()->FindOneofByName("kind");
  for (int i = 0; i < oneof->field_count(); ++i)
    names.push_back(oneof->field(i)->name());
  return absl::StrJoin(names, ", ");
}

constexpr const char* kMapFns[] = {"identity", "square", "negate", "add_one",
                                   "parse_example"};
constexpr const char* kPredicates[] = {"even", "odd", "positive"};
constexpr const char kCompressionRule[] =
    "allowed: \"\" (uncompressed), \"ZLIB\" or \"GZIP\"";
constexpr const char* kReaders[] = {"tfrecord", "text_line", "fixed_length"};

template <size_t N>
bool OneOf(const std::string& value, const char* const (&names)[N]) {
  for (const char* n : names) {
    if (value == n) return true;
  }
  return false;
}
template <size_t N>
std::string Join(const char* const (&names)[N]) {
  return absl::StrJoin(names, ", ");
}

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

constexpr const char* kFileSetNameRule =
    "must be 1 to 64 characters from [A-Za-z0-9_.-], not starting with '.' "
    "(the name becomes a directory under the data directory)";

bool IsValidFileSetName(const std::string& name) {
  if (name.empty() || name.size() > kMaxFileSetNameLength || name[0] == '.')
    return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

class Validator {
 public:
  explicit Validator(const LoadedScenario& s) : s_(s) {}

  // One rule for the slice (issue 21): the pod follows cluster.slice, and a
  // run.pod that names a slice, or a generation and shape, must name the same
  // chips (generation and chip mesh), so a sweep over cluster.slice can never
  // run every point on the pod's slice. A pod or cluster slice that does not
  // parse is left to the check that reads it.
  absl::Status CheckPodMatchesCluster(const Cursor& c, const Scenario& sc) {
    const proto::PodSpec& pod = sc.run().pod();
    absl::StatusOr<runtime::SliceLayout> cluster =
        runtime::ParseSlice(sc.cluster().slice());
    if (!cluster.ok()) return absl::OkStatus();
    const runtime::TpuGeneration* generation = nullptr;
    std::array<int, 3> mesh = {1, 1, 1};
    std::string field, value;
    if (pod.has_slice()) {
      absl::StatusOr<runtime::SliceLayout> named =
          runtime::ParseSlice(pod.slice());
      if (!named.ok()) return absl::OkStatus();
      generation = named->generation;
      mesh = named->chip_mesh;
      field = "slice";
      value = Quote(pod.slice());
    } else {
      absl::StatusOr<const runtime::TpuGeneration*> found =
          runtime::FindTpuGeneration(pod.generation());
      if (!found.ok() || pod.shape_size() > 3) return absl::OkStatus();
      generation = *found;
      for (int i = 0; i < pod.shape_size(); ++i) mesh[i] = pod.shape(i);
      field = pod.has_generation() ? "generation" : "shape";
      value = pod.has_generation()
                  ? absl::StrCat(Quote(pod.generation()), " shape [",
                                 absl::StrJoin(pod.shape(), ", "), "]")
                  : absl::StrCat("[", absl::StrJoin(pod.shape(), ", "), "]");
    }
    if (generation != nullptr && cluster->generation != nullptr &&
        std::string(generation->name) == cluster->generation->name &&
        mesh == cluster->chip_mesh) {
      return absl::OkStatus();
    }
    auto chips = [](const runtime::TpuGeneration* g,
                    const std::array<int, 3>& m) {
      return absl::StrCat(m[0] * m[1] * m[2], " ",
                          g != nullptr ? g->name : "?", " chips (",
                          absl::StrJoin(m, "x"), ")");
    };
    return c.Child(pod, "pod").Error(
        field, value,
        absl::StrCat("names ", chips(generation, mesh), " but cluster.slice=",
                     Quote(sc.cluster().slice()), " names ",
                     chips(cluster->generation, cluster->chip_mesh),
                     "; the pod follows cluster.slice: drop run.pod's slice "
                     "(or generation and shape), or make it name the same "
                     "chips"));
  }

  absl::Status CheckRun(const Cursor& c, const Scenario& sc) {
    const RunSpec& run = sc.run();
    if (run.has_backend() && run.backend() != "sim" && run.backend() != "host" &&
        run.backend() != "pjrt") {
      return c.Error("backend", Quote(run.backend()),
                     "must be \"sim\", \"host\" or \"pjrt\"");
    }
    if (run.has_steps_per_run() && run.steps_per_run() < 1) {
      return c.Error("steps_per_run", absl::StrCat(run.steps_per_run()),
                     "must be >= 1");
    }
    if (run.has_steps() && run.steps() < 1) {
      return c.Error("steps", absl::StrCat(run.steps()), "must be >= 1");
    }
    if (run.has_program() && run.has_workload()) {
      return c.Error("program", Quote(run.program()),
                     "replaces run.workload; set one of run.program and "
                     "run.workload, not both");
    }
    if (run.has_program() && run.program().empty()) {
      return c.Error("program", "\"\"",
                     "must be the path of a StableHLO (.mlir) or HLO (.pb) "
                     "module");
    }
    if (!run.has_program() &&
        (!run.has_workload() || run.workload().name().empty())) {
      return c.Error("workload", "",
                     "missing; set workload { name: \"mlp\" } (tpusim run "
                     "--help lists the workloads), or run.program");
    }
    const bool pod_names_slice = run.pod().has_slice() ||
                                 run.pod().has_generation() ||
                                 run.pod().shape_size() > 0;
    if (!pod_names_slice && !sc.cluster().has_slice()) {
      return c.Error("pod", "",
                     "missing; set run.pod { slice: \"v4-32\" } or "
                     "cluster.slice");
    }
    if (pod_names_slice && sc.cluster().has_slice()) {
      TPUSIM_RETURN_IF_ERROR(CheckPodMatchesCluster(c, sc));
    }
    if (run.has_device_assignment()) {
      const DeviceAssignmentSpec& da = run.device_assignment();
      if (da.has_num_replicas() && da.num_replicas() < 1) {
        return c.Child(da, "device_assignment")
            .Error("num_replicas", absl::StrCat(da.num_replicas()),
                   "must be >= 1");
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run() {
    const Scenario& sc = s_.proto;
    Cursor root(sc, s_.locations.get(), "", 0, &s_.source_name);
    if (!sc.has_cluster()) {
      return root.Error(
          "cluster", "",
          "missing; set cluster { slice: \"v3-8\" } or cluster { workers: W "
          "replicas_per_worker: R }");
    }
    TPUSIM_RETURN_IF_ERROR(
        CheckCluster(root.Child(sc.cluster(), "cluster"), sc.cluster()));
    if (sc.has_semantics() && sc.semantics() != "2.2" &&
        sc.semantics() != "2.4" && sc.semantics() != "2.21") {
      return root.Error("semantics", Quote(sc.semantics()),
                        "must be \"2.2\", \"2.4\" or \"2.21\"");
    }
    if (sc.has_global_batch_size() && sc.global_batch_size() < 1) {
      return root.Error("global_batch_size",
                        absl::StrCat(sc.global_batch_size()), "must be >= 1");
    }
    std::set<std::string> names;
    for (int i = 0; i < sc.file_set_size(); ++i) {
      const FileSet& fs = sc.file_set(i);
      Cursor c = root.Child(fs, "file_set", i);
      if (!fs.has_name() || fs.name().empty())
        return c.Error("name", "", "missing");
      if (!IsValidFileSetName(fs.name())) {
        return c.Error("name", Quote(fs.name()), kFileSetNameRule);
      }
      if (!names.insert(fs.name()).second) {
        return c.Error("name", Quote(fs.name()),
                       "another file_set has this name");
      }
      if (!fs.has_num_files())
        return c.Error("num_files", "", "missing; must be >= 1");
      if (fs.num_files() < 1 || fs.num_files() > 10000) {
        return c.Error("num_files", absl::StrCat(fs.num_files()),
                       "must be in [1, 10000]");
      }
      if (!fs.has_records_per_file()) {
        return c.Error("records_per_file", "", "missing; must be >= 0");
      }
      if (fs.records_per_file() < 0 || fs.records_per_file() > 1000000) {
        return c.Error("records_per_file", absl::StrCat(fs.records_per_file()),
                       "must be in [0, 1000000]");
      }
      if (!data::ParseCompressionType(fs.compression_type()).ok()) {
        return c.Error("compression_type", Quote(fs.compression_type()),
                       kCompressionRule);
      }
    }
    file_sets_ = names;
    from_function_ = sc.api() == Scenario::DISTRIBUTE_DATASETS_FROM_FUNCTION;
    if (sc.has_run()) {
      // A module (run.program) has its batch in its shapes; the field only
      // gives the report's examples/s.
      if (!sc.has_global_batch_size() && !sc.run().has_program()) {
        return root.Error("global_batch_size", "",
                          "missing; `run` needs the global batch size");
      }
      TPUSIM_RETURN_IF_ERROR(CheckRun(root.Child(sc.run(), "run"), sc));
      // `run` without a pipeline trains on synthetic input.
      if (sc.pipeline_size() == 0) return absl::OkStatus();
    }
    if (sc.pipeline_size() == 0) {
      return root.Error(
          "pipeline", "",
          "missing; at least one stage is required, starting with a source "
          "(e.g. pipeline { range { stop: 16 } })");
    }
    TPUSIM_RETURN_IF_ERROR(CheckPipeline(root, sc.pipeline(), "pipeline"));
    // The global batch must agree with the batch stage that makes global
    // batches.
    if (!from_function_ && sc.has_global_batch_size()) {
      for (int i = sc.pipeline_size() - 1; i >= 0; --i) {
        const Stage& st = sc.pipeline(i);
        if (st.has_map_and_batch() && st.map_and_batch().has_batch_size()) {
          if (st.map_and_batch().batch_size() != sc.global_batch_size()) {
            Cursor c = root.Child(st, "pipeline", i)
                           .Child(st.map_and_batch(), "map_and_batch");
            return c.Error(
                "batch_size", absl::StrCat(st.map_and_batch().batch_size()),
                absl::StrCat(
                    "contradicts global_batch_size=", sc.global_batch_size(),
                    " (with DISTRIBUTE_DATASET the last batch stage makes "
                    "the global batch)"));
          }
          break;
        }
        if (st.has_batch() && st.batch().has_batch_size()) {
          if (st.batch().batch_size() != sc.global_batch_size()) {
            Cursor c = root.Child(st, "pipeline", i).Child(st.batch(), "batch");
            return c.Error(
                "batch_size", absl::StrCat(st.batch().batch_size()),
                absl::StrCat(
                    "contradicts global_batch_size=", sc.global_batch_size(),
                    " (with DISTRIBUTE_DATASET the last batch stage makes "
                    "the global batch)"));
          }
          break;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckCluster(const Cursor& c, const Cluster& cl) {
    if (cl.has_slice()) {
      if (cl.has_workers() || cl.has_replicas_per_worker()) {
        return c.Error(
            cl.has_workers() ? "workers" : "replicas_per_worker",
            absl::StrCat(cl.has_workers() ? cl.workers()
                                          : cl.replicas_per_worker()),
            absl::StrCat(
                "contradicts cluster.slice=", Quote(cl.slice()),
                "; give a slice or workers and replicas_per_worker, not "
                "both"));
      }
      absl::StatusOr<runtime::SliceLayout> layout =
          runtime::ParseSlice(cl.slice());
      if (!layout.ok()) {
        return c.Error("slice", Quote(cl.slice()), layout.status().message());
      }
      return absl::OkStatus();
    }
    if (!cl.has_workers() && !cl.has_replicas_per_worker()) {
      return c.Error(
          "missing a layout; set slice, or workers and replicas_per_worker");
    }
    if (!cl.has_workers())
      return c.Error("workers", "", "missing; must be >= 1");
    if (!cl.has_replicas_per_worker()) {
      return c.Error("replicas_per_worker", "", "missing; must be >= 1");
    }
    if (cl.workers() < 1 || cl.workers() > 4096) {
      return c.Error("workers", absl::StrCat(cl.workers()),
                     "must be in [1, 4096]");
    }
    if (cl.replicas_per_worker() < 1 || cl.replicas_per_worker() > 64) {
      return c.Error("replicas_per_worker",
                     absl::StrCat(cl.replicas_per_worker()),
                     "must be in [1, 64]");
    }
    return absl::OkStatus();
  }

  template <typename Stages>
  absl::Status CheckPipeline(const Cursor& parent, const Stages& stages,
                             absl::string_view field) {
    if (stages.empty()) {
      return parent.Error(field, "",
                          "missing; a pipeline needs at least one stage");
    }
    for (int i = 0; i < stages.size(); ++i) {
      const Stage& st = stages.Get(i);
      Cursor c = parent.Child(st, field, i);
      TPUSIM_ASSIGN_OR_RETURN(const std::string name,
                              CountedStageName(parent, st, field, i));
      if (i == 0 && !IsSource(st)) {
        return parent.Error(
            field, i, "",
            absl::StrCat("stage 0 is \"", name,
                         "\" but a pipeline must start with a source (range, "
                         "from_tensor_slices, from_tensors, list_files, "
                         "tfrecord, text_line, fixed_length, zip)"));
      }
      if (i > 0 && IsSource(st) && !IsReader(st)) {
        return parent.Error(
            field, i, "",
            absl::StrCat("\"", name, "\" is a source and can only be stage 0"));
      }
      TPUSIM_RETURN_IF_ERROR(CheckStageAndCost(c, st, name, /*first=*/i == 0));
    }
    return absl::OkStatus();
  }

  // Counts stage `i` of `field` against kMaxScenarioStages and returns its
  // kind's name; an empty stage is an error.
  absl::StatusOr<std::string> CountedStageName(const Cursor& parent,
                                               const Stage& st,
                                               absl::string_view field, int i) {
    if (++stage_count_ > kMaxScenarioStages) {
      return parent.Error(
          field, i, "",
          absl::StrCat("the scenario has more than ", kMaxScenarioStages,
                       " stages (counting nested pipelines); tpusim's limit "
                       "keeps deep pipelines from exhausting the stack"));
    }
    std::string name = StageName(st);
    if (name.empty()) {
      return parent.Error(
          field, i, "",
          absl::StrCat("empty stage; set exactly one of ", AllStageNames()));
    }
    return name;
  }

  // The stage's own fields, then its host cost (any stage may declare one).
  absl::Status CheckStageAndCost(const Cursor& c, const Stage& st,
                                 const std::string& name, bool first) {
    TPUSIM_RETURN_IF_ERROR(CheckStage(c, st, name, first));
    if (!st.has_host_cost_ns()) return absl::OkStatus();
    TPUSIM_RETURN_IF_ERROR(
        CheckHostCostNs(c, "host_cost_ns", st.host_cost_ns()));
    if (st.has_map() && st.map().has_cpu_cost_ns()) {
      return c.Error("host_cost_ns", absl::StrCat(st.host_cost_ns()),
                     "a map stage sets host_cost_ns or map.cpu_cost_ns, "
                     "not both");
    }
    return absl::OkStatus();
  }

  // A per-element host cost in ns: >= 0, and small enough to be a
  // Picoseconds count.
  static absl::Status CheckHostCostNs(const Cursor& c, absl::string_view field,
                                      int64_t ns) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 1000;
    if (ns < 0 || ns > kMax) {
      return c.Error(field, absl::StrCat(ns),
                     absl::StrCat("must be in [0, ", kMax,
                                  "] (nanoseconds of host CPU per element)"));
    }
    return absl::OkStatus();
  }

  // The stages of a function body (window's flat_map): transformations over
  // the function's dataset; none is allowed.
  template <typename Stages>
  absl::Status CheckBody(const Cursor& parent, const Stages& stages,
                         absl::string_view field) {
    for (int i = 0; i < stages.size(); ++i) {
      const Stage& st = stages.Get(i);
      Cursor c = parent.Child(st, field, i);
      TPUSIM_ASSIGN_OR_RETURN(const std::string name,
                              CountedStageName(parent, st, field, i));
      if (IsSource(st) && !IsReader(st)) {
        return parent.Error(
            field, i, "",
            absl::StrCat("\"", name,
                         "\" is a source; a function body transforms the "
                         "function's dataset"));
      }
      TPUSIM_RETURN_IF_ERROR(CheckStageAndCost(c, st, name, /*first=*/false));
    }
    return absl::OkStatus();
  }

  absl::Status CheckFileSetRef(const Cursor& c, const std::string& name) {
    if (file_sets_.count(name) == 0) {
      return c.Error(
          "file_set", Quote(name),
          file_sets_.empty()
              ? "no file_set with this name (the scenario defines none)"
              : absl::StrCat("no file_set with this name; defined: ",
                             absl::StrJoin(file_sets_, ", ")));
    }
    return absl::OkStatus();
  }

  absl::Status CheckTensors(const Cursor& c, const TensorsStage& t,
                            bool slices) {
    if (t.component_size() == 0) {
      return c.Error("component", "",
                     "missing; at least one component is required");
    }
    int keyed = 0;
    std::set<std::string> keys;
    for (int i = 0; i < t.component_size(); ++i) {
      const TensorLiteral& lit = t.component(i);
      Cursor cc = c.Child(lit, "component", i);
      if (lit.has_key()) {
        ++keyed;
        if (!keys.insert(lit.key()).second) {
          return cc.Error("key", Quote(lit.key()), "duplicate key");
        }
      }
      const std::string dtype_name = lit.has_dtype() ? lit.dtype() : "int64";
      absl::StatusOr<runtime::DType> dtype = runtime::DTypeFromName(dtype_name);
      if (!dtype.ok())
        return cc.Error("dtype", Quote(dtype_name), dtype.status().message());
      const int n_int = lit.int_values_size(),
                n_float = lit.float_values_size(),
                n_str = lit.string_values_size();
      if ((n_int > 0) + (n_float > 0) + (n_str > 0) > 1) {
        return cc.Error(
            "", "",
            "set only one of int_values, float_values and string_values");
      }
      int64_t count = n_int + n_float + n_str;
      const char* want = runtime::IsInteger(*dtype)    ? "int_values"
                         : runtime::IsFloating(*dtype) ? "float_values"
                                                       : "string_values";
      const char* got = n_int     ? "int_values"
                        : n_float ? "float_values"
                                  : "string_values";
      if (count > 0 && std::string(want) != got) {
        return cc.Error(got, "",
                        absl::StrCat("do not match dtype ", Quote(dtype_name),
                                     "; use ", want));
      }
      if (*dtype == runtime::DType::kI32 || *dtype == runtime::DType::kU8) {
        const int64_t lo = *dtype == runtime::DType::kU8
                               ? 0
                               : std::numeric_limits<int32_t>::min();
        const int64_t hi = *dtype == runtime::DType::kU8
                               ? 255
                               : std::numeric_limits<int32_t>::max();
        for (int v = 0; v < lit.int_values_size(); ++v) {
          if (lit.int_values(v) < lo || lit.int_values(v) > hi) {
            return cc.Error("int_values", v, absl::StrCat(lit.int_values(v)),
                            absl::StrCat("out of range for ", dtype_name, " [",
                                         lo, ", ", hi, "]"));
          }
        }
      }
      if (lit.scalar() && lit.shape_size() > 0) {
        return cc.Error("scalar", "true",
                        "contradicts shape; a scalar has shape []");
      }
      int64_t elements = lit.scalar() ? 1 : count;
      if (lit.shape_size() > 0) {
        elements = 1;
        for (int d = 0; d < lit.shape_size(); ++d) {
          if (lit.shape(d) < 0) {
            return cc.Error("shape", d, absl::StrCat(lit.shape(d)),
                            "must be >= 0");
          }
        }
        const runtime::Shape shape(
            std::vector<int64_t>(lit.shape().begin(), lit.shape().end()));
        absl::StatusOr<int64_t> bytes = runtime::CheckedByteSize(*dtype, shape);
        if (!bytes.ok()) {
          return cc.Error("shape", shape.ToString(), bytes.status().message());
        }
        elements = shape.num_elements();
      }
      if (elements != count) {
        return cc.Error(
            want, "",
            absl::StrCat("has ", count, " value(s) but the shape needs ",
                         elements));
      }
      if (slices && lit.scalar()) {
        return cc.Error(
            "scalar", "true",
            "from_tensor_slices slices along dimension 0; a scalar has none");
      }
    }
    if (keyed != 0 && keyed != t.component_size()) {
      return c.Error(
          "component", "",
          "either every component has a key (a dict element) or none does");
    }
    return absl::OkStatus();
  }

  absl::Status CheckReaderFiles(const Cursor& c, const ReaderStage& r,
                                bool first, const std::string& name) {
    const int given = (r.file_size() > 0) + r.has_glob() + r.has_file_set();
    if (first && given != 1) {
      return c.Error(given == 0
                         ? "missing the files; set file, glob or file_set"
                         : "set only one of file, glob and file_set");
    }
    if (!first && given != 0) {
      const char* f = r.file_size() > 0 ? "file"
                      : r.has_glob()    ? "glob"
                                        : "file_set";
      return c.Error(f, "",
                     "a reader after stage 0 reads the file names its input "
                     "yields; remove "
                     "the files or make the reader stage 0");
    }
    if (r.has_file_set())
      TPUSIM_RETURN_IF_ERROR(CheckFileSetRef(c, r.file_set()));
    if (r.has_glob() && r.glob().empty())
      return c.Error("glob", "\"\"", "must not be empty");
    if (r.has_num_parallel_reads() &&
        (r.num_parallel_reads() < 1 ||
         r.num_parallel_reads() > data::kMaxCycleLength)) {
      return c.Error(
          "num_parallel_reads", absl::StrCat(r.num_parallel_reads()),
          absl::StrCat("must be in [1, ", data::kMaxCycleLength, "]"));
    }
    const bool fixed = name == "fixed_length";
    if (!fixed && (r.has_record_bytes() || r.has_header_bytes() ||
                   r.has_footer_bytes())) {
      return c.Error(r.has_record_bytes()   ? "record_bytes"
                     : r.has_header_bytes() ? "header_bytes"
                                            : "footer_bytes",
                     "", "only fixed_length readers take record sizes");
    }
    if (fixed)
      TPUSIM_RETURN_IF_ERROR(
          CheckRecordSizes(c, r.has_record_bytes(), r.record_bytes(),
                           r.header_bytes(), r.footer_bytes()));
    if (r.has_compression_type()) {
      if (name != "tfrecord") {
        return c.Error("compression_type", Quote(r.compression_type()),
                       "only tfrecord readers take a compression_type");
      }
      if (!data::ParseCompressionType(r.compression_type()).ok()) {
        return c.Error("compression_type", Quote(r.compression_type()),
                       kCompressionRule);
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckRecordSizes(const Cursor& c, bool has_record,
                                int64_t record, int64_t header,
                                int64_t footer) {
    if (!has_record)
      return c.Error("record_bytes", "", "missing; must be >= 1");
    if (record < 1)
      return c.Error("record_bytes", absl::StrCat(record), "must be >= 1");
    if (header < 0)
      return c.Error("header_bytes", absl::StrCat(header), "must be >= 0");
    if (footer < 0)
      return c.Error("footer_bytes", absl::StrCat(footer), "must be >= 0");
    return absl::OkStatus();
  }

  absl::Status CheckCount(const Cursor& c, const CountStage& s) {
    if (!s.has_count()) return c.Error("count", "", "missing; -1 means all");
    if (s.count() < -1)
      return c.Error("count", absl::StrCat(s.count()), "must be >= -1");
    return absl::OkStatus();
  }

  // A map stage (also the map of map_and_batch).
  absl::Status CheckMap(const Cursor& c, const MapStage& m) {
    if (!m.has_fn())
      return c.Error("fn", "", absl::StrCat("missing; one of ", Join(kMapFns)));
    if (!OneOf(m.fn(), kMapFns)) {
      return c.Error("fn", Quote(m.fn()),
                     absl::StrCat("unknown; one of ", Join(kMapFns)));
    }
    if (m.fn() == "parse_example") {
      if (m.feature_size() == 0) {
        return c.Error("feature", "",
                       "missing; parse_example needs at least one feature");
      }
      std::set<std::string> feature_names;
      for (int i = 0; i < m.feature_size(); ++i) {
        const FeatureSpec& f = m.feature(i);
        Cursor fc = c.Child(f, "feature", i);
        if (!f.has_name() || f.name().empty())
          return fc.Error("name", "", "missing");
        if (!feature_names.insert(f.name()).second) {
          return fc.Error("name", Quote(f.name()), "duplicate feature");
        }
        if (f.has_dtype() && f.dtype() != "int64" && f.dtype() != "float32" &&
            f.dtype() != "string") {
          return fc.Error("dtype", Quote(f.dtype()),
                          "must be int64, float32 or string");
        }
        if (f.has_kind() && f.kind() != "fixed_len" && f.kind() != "var_len" &&
            f.kind() != "fixed_len_sequence") {
          return fc.Error("kind", Quote(f.kind()),
                          "must be fixed_len, var_len or fixed_len_sequence");
        }
        if (f.kind() == "var_len" && f.shape_size() > 0) {
          return fc.Error("shape", "", "var_len takes no shape");
        }
        if (f.has_allow_missing() && f.kind() != "fixed_len_sequence") {
          return fc.Error("allow_missing", "",
                          "only fixed_len_sequence takes allow_missing");
        }
        for (int d = 0; d < f.shape_size(); ++d) {
          if (f.shape(d) < 1) {
            return fc.Error("shape", d, absl::StrCat(f.shape(d)),
                            "must be >= 1");
          }
        }
        const runtime::Shape shape(
            std::vector<int64_t>(f.shape().begin(), f.shape().end()));
        absl::StatusOr<runtime::DType> dtype =
            runtime::DTypeFromName(f.has_dtype() ? f.dtype() : "int64");
        absl::StatusOr<int64_t> bytes = runtime::CheckedByteSize(*dtype, shape);
        if (!bytes.ok()) {
          return fc.Error("shape", shape.ToString(), bytes.status().message());
        }
      }
    } else if (m.feature_size() > 0) {
      return c.Error("feature", "",
                     absl::StrCat("only parse_example takes features, not ",
                                  Quote(m.fn())));
    }
    if (m.has_cpu_cost_ns()) {
      TPUSIM_RETURN_IF_ERROR(CheckHostCostNs(c, "cpu_cost_ns", m.cpu_cost_ns()));
    }
    if (m.has_num_parallel_calls() &&
        (m.num_parallel_calls() == 0 || m.num_parallel_calls() < -1)) {
      return c.Error("num_parallel_calls", absl::StrCat(m.num_parallel_calls()),
                     "must be >= 1 or -1 (AUTOTUNE)");
    }
    return absl::OkStatus();
  }

  absl::Status CheckStage(const Cursor& sc, const Stage& st,
                          const std::string& name, bool first) {
    switch (st.kind_case()) {
      case Stage::kRange: {
        Cursor c = sc.Child(st.range(), "range");
        if (!st.range().has_stop()) return c.Error("stop", "", "missing");
        if (st.range().has_step() && st.range().step() == 0) {
          return c.Error("step", "0", "must not be 0");
        }
        return absl::OkStatus();
      }
      case Stage::kFromTensorSlices:
        return CheckTensors(
            sc.Child(st.from_tensor_slices(), "from_tensor_slices"),
            st.from_tensor_slices(), /*slices=*/true);
      case Stage::kFromTensors:
        return CheckTensors(sc.Child(st.from_tensors(), "from_tensors"),
                            st.from_tensors(),
                            /*slices=*/false);
      case Stage::kListFiles: {
        Cursor c = sc.Child(st.list_files(), "list_files");
        const ListFilesStage& l = st.list_files();
        if ((l.pattern_size() > 0) == l.has_file_set()) {
          return c.Error(l.has_file_set()
                             ? "set only one of pattern and file_set"
                             : "missing the files; set pattern or file_set");
        }
        for (int i = 0; i < l.pattern_size(); ++i) {
          if (l.pattern(i).empty())
            return c.Error("pattern", i, "\"\"", "must not be empty");
        }
        if (l.has_file_set())
          TPUSIM_RETURN_IF_ERROR(CheckFileSetRef(c, l.file_set()));
        return absl::OkStatus();
      }
      case Stage::kTfrecord:
        return CheckReaderFiles(sc.Child(st.tfrecord(), "tfrecord"),
                                st.tfrecord(), first, name);
      case Stage::kTextLine:
        return CheckReaderFiles(sc.Child(st.text_line(), "text_line"),
                                st.text_line(), first, name);
      case Stage::kFixedLength:
        return CheckReaderFiles(sc.Child(st.fixed_length(), "fixed_length"),
                                st.fixed_length(), first, name);
      case Stage::kZip: {
        Cursor c = sc.Child(st.zip(), "zip");
        if (st.zip().input_size() == 0)
          return c.Error("input", "", "missing; zip needs inputs");
        int keyed = 0;
        std::set<std::string> keys;
        for (int i = 0; i < st.zip().input_size(); ++i) {
          const Pipeline& p = st.zip().input(i);
          Cursor ic = c.Child(p, "input", i);
          if (p.has_key()) {
            ++keyed;
            if (!keys.insert(p.key()).second)
              return ic.Error("key", Quote(p.key()), "duplicate");
          }
          TPUSIM_RETURN_IF_ERROR(CheckPipeline(ic, p.pipeline(), "pipeline"));
        }
        if (keyed != 0 && keyed != st.zip().input_size()) {
          return c.Error(
              "input", "",
              "either every input has a key (a dict element) or none");
        }
        return absl::OkStatus();
      }
      case Stage::kBatch: {
        Cursor c = sc.Child(st.batch(), "batch");
        const BatchStage& b = st.batch();
        if (b.has_batch_size() && b.use_global_batch()) {
          return c.Error("use_global_batch", "true",
                         absl::StrCat("contradicts batch_size=", b.batch_size(),
                                      "; set only one"));
        }
        if (!b.has_batch_size() && !b.use_global_batch()) {
          return c.Error("batch_size", "",
                         "missing; set batch_size or use_global_batch: true");
        }
        if (b.has_batch_size() && b.batch_size() < 1) {
          return c.Error("batch_size", absl::StrCat(b.batch_size()),
                         "must be >= 1");
        }
        if (b.use_global_batch() && !s_.proto.has_global_batch_size()) {
          return c.Error(
              "use_global_batch", "true",
              "needs the scenario's global_batch_size, which is not set");
        }
        return absl::OkStatus();
      }
      case Stage::kShard: {
        Cursor c = sc.Child(st.shard(), "shard");
        const ShardStage& s = st.shard();
        if (s.by_input_context()) {
          if (s.has_num_shards() || s.has_index()) {
            return c.Error(s.has_num_shards() ? "num_shards" : "index", "",
                           "contradicts by_input_context: true; set only one");
          }
          if (!from_function_) {
            return c.Error(
                "by_input_context", "true",
                "needs api: DISTRIBUTE_DATASETS_FROM_FUNCTION (there is no "
                "InputContext with DISTRIBUTE_DATASET)");
          }
          return absl::OkStatus();
        }
        if (!s.has_num_shards()) {
          return c.Error("num_shards", "",
                         "missing; set num_shards and index, or "
                         "by_input_context: true");
        }
        if (s.num_shards() < 1)
          return c.Error("num_shards", absl::StrCat(s.num_shards()),
                         "must be >= 1");
        if (!s.has_index()) return c.Error("index", "", "missing");
        if (s.index() < 0 || s.index() >= s.num_shards()) {
          return c.Error(
              "index", absl::StrCat(s.index()),
              absl::StrCat("must be in [0, ", s.num_shards() - 1, "]"));
        }
        return absl::OkStatus();
      }
      case Stage::kRepeat: {
        Cursor c = sc.Child(st.repeat(), "repeat");
        if (st.repeat().has_count() && st.repeat().count() < -1) {
          return c.Error("count", absl::StrCat(st.repeat().count()),
                         "must be >= -1 (-1 = forever)");
        }
        return absl::OkStatus();
      }
      case Stage::kMap:
        return CheckMap(sc.Child(st.map(), "map"), st.map());
      case Stage::kFilter: {
        Cursor c = sc.Child(st.filter(), "filter");
        if (!st.filter().has_predicate()) {
          return c.Error("predicate", "",
                         absl::StrCat("missing; one of ", Join(kPredicates)));
        }
        if (!OneOf(st.filter().predicate(), kPredicates)) {
          return c.Error("predicate", Quote(st.filter().predicate()),
                         absl::StrCat("unknown; one of ", Join(kPredicates)));
        }
        return absl::OkStatus();
      }
      case Stage::kShuffle: {
        Cursor c = sc.Child(st.shuffle(), "shuffle");
        if (!st.shuffle().has_buffer_size())
          return c.Error("buffer_size", "", "missing; must be >= 1");
        if (st.shuffle().buffer_size() < 1) {
          return c.Error("buffer_size",
                         absl::StrCat(st.shuffle().buffer_size()),
                         "must be >= 1");
        }
        return absl::OkStatus();
      }
      case Stage::kTake:
        return CheckCount(sc.Child(st.take(), "take"), st.take());
      case Stage::kSkip:
        return CheckCount(sc.Child(st.skip(), "skip"), st.skip());
      case Stage::kPrefetch: {
        Cursor c = sc.Child(st.prefetch(), "prefetch");
        if (st.prefetch().has_buffer_size() &&
            st.prefetch().buffer_size() < -1) {
          return c.Error("buffer_size",
                         absl::StrCat(st.prefetch().buffer_size()),
                         "must be >= -1 (-1 = AUTOTUNE)");
        }
        return absl::OkStatus();
      }
      case Stage::kCache:
        return absl::OkStatus();
      case Stage::kInterleave:
      case Stage::kFlatMap: {
        const bool interleave = st.kind_case() == Stage::kInterleave;
        const InterleaveStage& in =
            interleave ? st.interleave() : st.flat_map();
        Cursor c = sc.Child(in, name);
        if (!in.has_reader()) {
          return c.Error("reader", "",
                         absl::StrCat("missing; one of ", Join(kReaders)));
        }
        if (!OneOf(in.reader(), kReaders)) {
          return c.Error("reader", Quote(in.reader()),
                         absl::StrCat("unknown; one of ", Join(kReaders)));
        }
        if (!interleave && (in.has_cycle_length() || in.has_block_length())) {
          return c.Error(
              in.has_cycle_length() ? "cycle_length" : "block_length", "",
              "flat_map takes no cycle_length or block_length; use interleave");
        }
        if (in.has_cycle_length() && in.cycle_length() < 1 &&
            in.cycle_length() != -1) {
          return c.Error("cycle_length", absl::StrCat(in.cycle_length()),
                         "must be >= 1 or -1 (AUTOTUNE)");
        }
        if (in.has_block_length() && in.block_length() < 1 &&
            in.block_length() != -1) {
          return c.Error("block_length", absl::StrCat(in.block_length()),
                         "must be >= 1 or -1 (AUTOTUNE)");
        }
        if (in.reader() == "fixed_length") {
          return CheckRecordSizes(c, in.has_record_bytes(), in.record_bytes(),
                                  in.header_bytes(), in.footer_bytes());
        }
        if (in.has_record_bytes() || in.has_header_bytes() ||
            in.has_footer_bytes()) {
          return c.Error("record_bytes", "",
                         "only the fixed_length reader takes record sizes");
        }
        return absl::OkStatus();
      }
      case Stage::kConcatenate: {
        Cursor c = sc.Child(st.concatenate(), "concatenate");
        return CheckPipeline(c, st.concatenate().pipeline(), "pipeline");
      }
      case Stage::kPaddedBatch: {
        Cursor c = sc.Child(st.padded_batch(), "padded_batch");
        const PaddedBatchStage& b = st.padded_batch();
        if (!b.has_batch_size()) return c.Error("batch_size", "", "missing");
        if (b.batch_size() < 1) {
          return c.Error("batch_size", absl::StrCat(b.batch_size()),
                         "must be >= 1");
        }
        for (int i = 0; i < b.padded_shape_size(); ++i) {
          for (int64_t d : b.padded_shape(i).dim()) {
            if (d < -1) {
              return c.Child(b.padded_shape(i), "padded_shape", i)
                  .Error("dim", absl::StrCat(d),
                         "must be >= 0, or -1 to pad to the batch maximum");
            }
          }
        }
        return absl::OkStatus();
      }
      case Stage::kUnbatch:
        return absl::OkStatus();
      case Stage::kWindow: {
        Cursor c = sc.Child(st.window(), "window");
        const WindowStage& w = st.window();
        if (!w.has_size()) return c.Error("size", "", "missing; must be >= 1");
        if (w.size() < 1) {
          return c.Error("size", absl::StrCat(w.size()), "must be >= 1");
        }
        if (w.has_shift() && w.shift() < 1) {
          return c.Error("shift", absl::StrCat(w.shift()), "must be >= 1");
        }
        if (w.has_stride() && w.stride() < 1) {
          return c.Error("stride", absl::StrCat(w.stride()), "must be >= 1");
        }
        return CheckBody(c, w.flat_map(), "flat_map");
      }
      case Stage::kMapAndBatch: {
        Cursor c = sc.Child(st.map_and_batch(), "map_and_batch");
        const MapAndBatchStage& m = st.map_and_batch();
        if (!m.has_map()) {
          return c.Error("map", "", "missing; the map function (map { fn })");
        }
        if (!m.has_batch_size())
          return c.Error("batch_size", "", "missing; must be >= 1");
        if (m.batch_size() < 1) {
          return c.Error("batch_size", absl::StrCat(m.batch_size()),
                         "must be >= 1");
        }
        return CheckMap(c.Child(m.map(), "map"), m.map());
      }
      case Stage::KIND_NOT_SET:
        break;
    }
    return sc.Error("empty stage");
  }

  const LoadedScenario& s_;
  std::set<std::string> file_sets_;
  bool from_function_ = false;
  int stage_count_ = 0;
};

}  // namespace

std::string ResolveScenarioPath(const LoadedScenario& scenario,
                                const std::string& path) {
  if (path.empty() || path[0] == '/' || scenario.base_dir.empty()) return path;
  return absl::StrCat(scenario.base_dir, "/", path);
}

absl::StatusOr<LoadedScenario> ParseScenario(
    absl::string_view text, absl::string_view source_name,
    absl::string_view base_dir, const std::vector<std::string>& overrides) {
  LoadedScenario out;
  out.source_name = std::string(source_name);
  out.base_dir = std::string(base_dir);
  auto tree = std::make_shared<TextFormat::ParseInfoTree>();
  FirstErrorCollector errors;
  TextFormat::Parser parser;
  // Without a limit, a scenario nested a few thousand levels deep overflows
  // the stack inside protobuf's recursive-descent parser; with it, the parser
  // reports "Message is too deep" at the offending line.
  parser.SetRecursionLimit(kMaxScenarioNesting);
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree.get());
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  if (!parser.Parse(&input, &out.proto)) {
    if (errors.has_error()) {
      errors.LocateOffendingToken(text);
      return absl::InvalidArgumentError(errors.Describe(source_name));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": not a valid scenario"));
  }
  out.locations = std::move(tree);
  for (const std::string& o : overrides) {
    TPUSIM_RETURN_IF_ERROR(ApplyFieldOverride(&out.proto, o));
  }
  TPUSIM_RETURN_IF_ERROR(ValidateScenario(out));
  return out;
}

absl::StatusOr<LoadedScenario> LoadScenarioFile(
    const std::string& path, const std::vector<std::string>& overrides) {
  TPUSIM_ASSIGN_OR_RETURN(
      const std::string text,
      common::ReadRegularFile(path, "scenario file", kMaxScenarioFileBytes));
  // Relative files are resolved against the scenario's directory ("" = the
  // current one, "/" for a file in the root directory).
  const size_t slash = path.rfind('/');
  std::string dir;
  if (slash == 0) {
    dir = "/";
  } else if (slash != std::string::npos) {
    dir = path.substr(0, slash);
  }
  return ParseScenario(text, path, dir, overrides);
}

absl::Status ValidateScenario(const LoadedScenario& scenario) {
  return Validator(scenario).Run();
}

namespace {

// Walks `field_path` through the message (reflection) and the parse tree to a
// cursor carrying the line of the deepest field written.
Cursor CursorAt(const LoadedScenario& scenario, absl::string_view field_path) {
  Cursor cursor(scenario.proto, scenario.locations.get(), "", 0,
                &scenario.source_name);
  const Message* msg = &scenario.proto;
  const std::vector<std::string> parts = absl::StrSplit(field_path, '.');
  for (size_t p = 0; p < parts.size(); ++p) {
    std::string name = parts[p];
    int index = -1;
    if (const size_t bracket = name.find('[');
        bracket != std::string::npos && name.back() == ']') {
      if (!absl::SimpleAtoi(name.substr(bracket + 1, name.size() - bracket - 2),
                            &index)) {
        index = -1;
      }
      name = name.substr(0, bracket);
    }
    const FieldDescriptor* fd =
        msg == nullptr ? nullptr : msg->GetDescriptor()->FindFieldByName(name);
    const bool last = p + 1 == parts.size();
    if (last || fd == nullptr ||
        fd->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE ||
        (fd->is_repeated() &&
         (index < 0 || index >= msg->GetReflection()->FieldSize(*msg, fd))) ||
        (!fd->is_repeated() && !msg->GetReflection()->HasField(*msg, fd))) {
      // The rest of the path is named as written, located at the last field
      // known.
      std::string rest = absl::StrJoin(parts.begin() + p, parts.end(), ".");
      if (!cursor.path().empty()) rest = absl::StrCat(cursor.path(), ".", rest);
      return Cursor(*msg, nullptr, rest, cursor.LineOf(name, index),
                    &scenario.source_name);
    }
    const Message& child =
        fd->is_repeated()
            ? msg->GetReflection()->GetRepeatedMessage(*msg, fd, index)
            : msg->GetReflection()->GetMessage(*msg, fd);
    cursor = cursor.Child(child, name, index);
    msg = &child;
  }
  return cursor;
}

}  // namespace

absl::Status ScenarioError(const LoadedScenario& scenario,
                           absl::string_view field_path,
                           absl::string_view value, absl::string_view problem) {
  return CursorAt(scenario, field_path).ErrorWithValue(value, problem);
}

absl::Status LocateScenarioStatus(const LoadedScenario& scenario,
                                  absl::string_view field_path,
                                  const absl::Status& status) {
  if (status.ok()) return status;
  const int line = CursorAt(scenario, field_path).line();
  return absl::Status(
      status.code(),
      absl::StrCat(scenario.source_name, line > 0 ? absl::StrCat(":", line) : "",
                   ": ", status.message()));
}

absl::StatusOr<ClusterLayout> ResolveCluster(const LoadedScenario& scenario) {
  const Cluster& cl = scenario.proto.cluster();
  ClusterLayout layout;
  if (cl.has_slice()) {
    // The topology code's slice layout (strategy/runtime/slice.h): hosts are
    // the input workers, the TPU devices of a host its replicas.
    absl::StatusOr<runtime::SliceLayout> slice =
        runtime::ParseSlice(cl.slice());
    if (!slice.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(scenario.source_name, ": cluster.slice=\"", cl.slice(),
                       "\": ", slice.status().message()));
    }
    layout.workers = slice->num_hosts;
    layout.replicas_per_worker = slice->devices_per_host;
    layout.slice = cl.slice();
    return layout;
  }
  if (cl.workers() < 1 || cl.replicas_per_worker() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(scenario.source_name,
                     ": cluster needs a slice or workers >= 1 and "
                     "replicas_per_worker >= 1"));
  }
  layout.workers = cl.workers();
  layout.replicas_per_worker = cl.replicas_per_worker();
  return layout;
}

std::string SemanticsOf(const Scenario& scenario) {
  return scenario.has_semantics() ? scenario.semantics() : "2.2";
}

std::string ShardPolicyName(Scenario::ShardPolicy policy) {
  return Scenario::ShardPolicy_Name(policy);
}

}  // namespace tpusim::scenarios
