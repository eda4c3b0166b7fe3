#include "tools/inspect_input_report.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tpusim::tools {
namespace {

using runtime::DType;
using runtime::Tensor;

Json ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
      return Json::Int(t.AsInt64(i));
    case DType::kF32:
      return Json::Float32(t.values<float>()[i]);
    case DType::kBF16:
      return Json::Float32(t.values<runtime::BFloat16>()[i].ToFloat());
    case DType::kF64:
      return Json::Float64(t.values<double>()[i]);
    case DType::kBytes:
      return Json::String(t.values<std::string>()[i]);
  }
  return Json::Null();
}

Json ComponentJson(const std::string& path, const Tensor& t) {
  std::vector<Json> shape;
  for (int64_t d : t.shape().dims()) shape.push_back(Json::Int(d));
  Json values;
  if (t.has_data()) {
    std::vector<Json> v;
    for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(ValueAt(t, i));
    values = Json::Array(std::move(v));
  }
  return Json::Object(
      {{"dtype", Json::String(std::string(runtime::DTypeName(t.dtype())))},
       {"path", Json::String(path)},
       {"shape", Json::Array(std::move(shape))},
       {"values", std::move(values)}});
}

// The sparse component form: the values' dtype, "shape" = dense_shape,
// "indices" one [i0, i1, ...] per value, "sparse": true.
Json SparseComponentJson(const std::string& path,
                         const data::SparseTensor& st) {
  std::vector<Json> shape;
  for (int64_t d : st.dense_shape.values<int64_t>())
    shape.push_back(Json::Int(d));
  const int64_t n = st.indices.shape().dim(0);
  const int64_t rank = st.indices.shape().dim(1);
  auto idx = st.indices.values<int64_t>();
  std::vector<Json> indices;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Json> index;
    for (int64_t d = 0; d < rank; ++d)
      index.push_back(Json::Int(idx[i * rank + d]));
    indices.push_back(Json::Array(std::move(index)));
  }
  std::vector<Json> values;
  for (int64_t i = 0; i < st.values.num_elements(); ++i)
    values.push_back(ValueAt(st.values, i));
  return Json::Object({{"dtype", Json::String(std::string(
                                     runtime::DTypeName(st.values.dtype())))},
                       {"indices", Json::Array(std::move(indices))},
                       {"path", Json::String(path)},
                       {"shape", Json::Array(std::move(shape))},
                       {"sparse", Json::Bool(true)},
                       {"values", Json::Array(std::move(values))}});
}

const data::SparseTensor* FindSparse(const scenarios::ReplicaInput& r,
                                     const std::string& path) {
  for (const auto& [p, st] : r.sparse) {
    if (p == path) return &st;
  }
  return nullptr;
}

std::string FormatSparse(const data::SparseTensor& st) {
  return absl::StrCat("SparseTensor(indices=", FormatTensorValues(st.indices),
                      ", values=", FormatTensorValues(st.values),
                      ", dense_shape=", FormatTensorValues(st.dense_shape),
                      ")");
}

Json ReplicaJson(const scenarios::ReplicaInput& r) {
  std::vector<Json> components;
  for (const auto& [path, leaf] : r.element.FlattenWithPaths()) {
    if (const data::SparseTensor* st = FindSparse(r, path)) {
      components.push_back(SparseComponentJson(path, *st));
      continue;
    }
    components.push_back(ComponentJson(path, *leaf));
  }
  return Json::Object({{"components", Json::Array(std::move(components))},
                       {"replica", Json::Int(r.replica)},
                       {"worker", Json::Int(r.worker)}});
}

std::string EndMessage(const scenarios::InputListing& l) {
  if (l.end.ok())
    return absl::StrCat("stopped after ", l.end_at_step, " steps");
  return std::string(l.end.message());
}

// Appends `value`'s members on separate lines; `expand(key, value)` writes a
// member's value.
template <typename Expand>
void DumpObjectLines(const Json& value, const std::string& indent,
                     Expand expand, std::string& out) {
  out += "{\n";
  size_t i = 0;
  for (const auto& [key, member] : value.members()) {
    absl::StrAppend(&out, indent, "  ", JsonQuote(key), ": ");
    expand(key, member, out);
    out += ++i < value.members().size() ? ",\n" : "\n";
  }
  absl::StrAppend(&out, indent, "}");
}

// An array with one item per line (compact items), or "[]".
void DumpArrayLines(const Json& array, const std::string& indent,
                    std::string& out) {
  if (array.items().empty()) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (size_t i = 0; i < array.items().size(); ++i) {
    absl::StrAppend(&out, indent, "  ", array.items()[i].Dump(),
                    i + 1 < array.items().size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, indent, "]");
}

void FormatValues(const Tensor& t, int dim, int64_t& index, std::string& out) {
  const auto& dims = t.shape().dims();
  if (dim == static_cast<int>(dims.size())) {
    const Json v = ValueAt(t, index++);
    out += v.Dump();
    return;
  }
  out += "[";
  for (int64_t i = 0; i < dims[dim]; ++i) {
    if (i > 0) out += ", ";
    FormatValues(t, dim + 1, index, out);
  }
  out += "]";
}

std::vector<absl::string_view> Lines(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace

Json ListingToJson(const scenarios::InputListing& l) {
  std::vector<Json> steps;
  for (const scenarios::InputStep& s : l.steps) {
    std::vector<Json> replicas;
    for (const scenarios::ReplicaInput& r : s.replicas)
      replicas.push_back(ReplicaJson(r));
    steps.push_back(
        Json::Object({{"replicas", Json::Array(std::move(replicas))},
                      {"step", Json::Int(s.step)}}));
  }
  std::vector<Json> workers, warnings;
  for (int w : l.replica_workers) workers.push_back(Json::Int(w));
  for (const std::string& w : l.warnings) warnings.push_back(Json::String(w));
  const std::string code = absl::StatusCodeToString(l.end.code());
  std::map<std::string, Json> doc = {
      {"end", Json::Object({{"at_step", Json::Int(l.end_at_step)},
                            {"code", Json::String(code)},
                            {"message", Json::String(EndMessage(l))}})},
      {"replica_workers", Json::Array(std::move(workers))},
      {"replicas", Json::Int(l.replicas)},
      {"semantics", Json::String(l.semantics)},
      {"steps", Json::Array(std::move(steps))},
      {"warnings", Json::Array(std::move(warnings))},
      {"workers", Json::Int(l.workers)},
  };
  if (!l.explain.empty()) {
    auto lines = [](const std::string& graph) {
      std::vector<Json> out;
      for (absl::string_view line :
           absl::StrSplit(graph, '\n', absl::SkipEmpty()))
        out.push_back(Json::String(std::string(line)));
      return Json::Array(std::move(out));
    };
    std::vector<Json> workers;
    for (const data::WorkerExplanation& e : l.explain) {
      workers.push_back(Json::Object({
          {"after", lines(e.after)},
          {"before", lines(e.before)},
          {"rebatch",
           Json::Object({{"case", Json::String(e.rebatch)},
                         {"detail", Json::String(e.rebatch_detail)}})},
          {"shard",
           Json::Object({{"applied", Json::String(e.applied_policy)},
                         {"reason", Json::String(e.shard_reason)},
                         {"requested", Json::String(e.requested_policy)}})},
          {"worker", Json::Int(e.worker)},
      }));
    }
    doc["explain"] =
        Json::Object({{"workers", Json::Array(std::move(workers))}});
  }
  return Json::Object(std::move(doc));
}

std::string FormatListingJson(const scenarios::InputListing& listing) {
  const Json doc = ListingToJson(listing);
  std::string out;
  DumpObjectLines(
      doc, "",
      [](const std::string& key, const Json& value, std::string& o) {
        if (key == "warnings") {
          DumpArrayLines(value, "  ", o);
        } else if (key == "explain") {
          // One worker per line.
          o += "{\"workers\": ";
          DumpArrayLines(value.members().at("workers"), "  ", o);
          o += "}";
        } else if (key == "steps" && !value.items().empty()) {
          o += "[\n";
          for (size_t i = 0; i < value.items().size(); ++i) {
            const Json& step = value.items()[i];
            o += "    {\"replicas\": ";
            DumpArrayLines(step.members().at("replicas"), "    ", o);
            absl::StrAppend(&o,
                            ", \"step\": ", step.members().at("step").Dump(),
                            "}", i + 1 < value.items().size() ? ",\n" : "\n");
          }
          o += "  ]";
        } else {
          o += value.Dump();
        }
      },
      out);
  out += "\n";
  return out;
}

std::string FormatTensorValues(const Tensor& t) {
  if (!t.has_data())
    return absl::StrCat("<abstract ", t.spec().ToString(), ">");
  std::string out;
  int64_t index = 0;
  FormatValues(t, 0, index, out);
  return out;
}

std::string FormatListingHeaderText(const scenarios::InputListing& l) {
  std::string out;
  if (!l.name.empty()) absl::StrAppend(&out, "scenario ", l.name, "\n");
  std::vector<std::string> placement;
  for (size_t r = 0; r < l.replica_workers.size(); ++r) {
    placement.push_back(absl::StrCat(r, "->", l.replica_workers[r]));
  }
  absl::StrAppend(&out, l.workers, " worker(s), ", l.replicas,
                  " replica(s) (replica->worker: ",
                  absl::StrJoin(placement, " "), "); semantics ", l.semantics,
                  "; ", l.api, "; shard policy ", l.shard_policy, "\n");
  out += FormatExplainText(l);
  return out;
}

std::string FormatExplainText(const scenarios::InputListing& l) {
  std::string out;
  for (const data::WorkerExplanation& e : l.explain) {
    absl::StrAppend(&out, "explain worker ", e.worker, "\n");
    absl::StrAppend(&out, "  shard policy ", e.requested_policy, " -> ",
                    e.applied_policy, ": ", e.shard_reason, "\n");
    absl::StrAppend(&out, "  rebatch ", e.rebatch, ": ", e.rebatch_detail,
                    "\n");
    for (const auto& [title, graph] :
         {std::pair<const char*, const std::string*>{"before", &e.before},
          {"after", &e.after}}) {
      absl::StrAppend(&out, "  pipeline ", title, " the rewrites:\n");
      for (absl::string_view line :
           absl::StrSplit(*graph, '\n', absl::SkipEmpty()))
        absl::StrAppend(&out, "    ", line, "\n");
    }
  }
  return out;
}

std::string FormatStepText(const scenarios::InputStep& s) {
  std::string out = absl::StrCat("step ", s.step, "\n");
  for (const scenarios::ReplicaInput& r : s.replicas) {
    absl::StrAppend(&out, "  replica ", r.replica, " (worker ", r.worker,
                    "): ");
    const auto leaves = r.element.FlattenWithPaths();
    auto format = [&r](const std::string& path, const runtime::Tensor& t) {
      const data::SparseTensor* st = FindSparse(r, path);
      return st != nullptr ? FormatSparse(*st) : FormatTensorValues(t);
    };
    if (r.element.is_leaf()) {
      out += format("0", r.element.leaf());
    } else if (leaves.empty()) {
      out += "()";
    } else {
      std::vector<std::string> parts;
      for (const auto& [path, leaf] : leaves) {
        parts.push_back(absl::StrCat(path, "=", format(path, *leaf)));
      }
      out += absl::StrJoin(parts, "; ");
    }
    out += "\n";
  }
  return out;
}

std::string FormatListingEndText(const scenarios::InputListing& l) {
  std::string out;
  if (l.end.ok()) {
    absl::StrAppend(&out, "end at step ", l.end_at_step, ": ", EndMessage(l),
                    "\n");
  } else {
    absl::StrAppend(&out, "end at step ", l.end_at_step, ": ",
                    absl::StatusCodeToString(l.end.code()), ": ",
                    l.end.message(), "\n");
  }
  for (const std::string& w : l.warnings)
    absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

std::string FormatListingText(const scenarios::InputListing& l) {
  std::string out = FormatListingHeaderText(l);
  for (const scenarios::InputStep& s : l.steps) out += FormatStepText(s);
  return out + FormatListingEndText(l);
}

absl::Status JsonListingCollector::Begin(
    const scenarios::InputListing& header) {
  listing_ = header;
  listing_.steps.clear();
  return absl::OkStatus();
}

absl::Status JsonListingCollector::Step(const scenarios::InputStep& step) {
  int64_t cells = 0;
  for (const scenarios::ReplicaInput& r : step.replicas) {
    for (const auto& [path, t] : r.element.FlattenWithPaths()) {
      // One for the component itself, one per value (a sparse component:
      // per value and per index coordinate).
      if (const data::SparseTensor* st = FindSparse(r, path)) {
        cells += 1 + st->values.num_elements() + st->indices.num_elements();
        continue;
      }
      cells += 1 + (t->has_data() ? t->num_elements() : 0);
    }
  }
  if (cells > max_values_ - values_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "--format=json (and --golden) hold the whole listing until it is "
        "complete, and step ",
        step.step, " would take it past ", max_values_,
        " values (tpusim's cap); ",
        step.step == 0 ? "a single step is too large to list as JSON"
                       : absl::StrCat("list at most --steps ", step.step),
        ", or use --format=text without --golden, which prints step by "
        "step"));
  }
  values_ += cells;
  listing_.steps.push_back(step);
  return absl::OkStatus();
}

scenarios::InputListing JsonListingCollector::Finish(
    const scenarios::InputListing& result) {
  scenarios::InputListing out = result;
  out.steps = std::move(listing_.steps);
  listing_ = scenarios::InputListing();
  values_ = 0;
  return out;
}

std::string GoldenDiff(absl::string_view expected, absl::string_view actual,
                       absl::string_view expected_name) {
  if (expected == actual) return "";
  const std::vector<absl::string_view> e = Lines(expected), a = Lines(actual);
  size_t first = 0;
  while (first < e.size() && first < a.size() && e[first] == a[first]) ++first;
  // Trim the common suffix (not into the common prefix) to find the differing
  // region.
  size_t e_end = e.size(), a_end = a.size();
  while (e_end > first && a_end > first && e[e_end - 1] == a[a_end - 1]) {
    --e_end;
    --a_end;
  }
  std::string out = absl::StrCat(
      "first difference at line ", first + 1, " (expected ", expected_name,
      ": ", e.size(), " lines; actual output: ", a.size(), " lines)\n");
  absl::StrAppend(&out, "--- expected ", expected_name,
                  "\n+++ actual output\n");
  absl::StrAppend(&out, "@@ line ", first + 1, " @@\n");
  constexpr size_t kContext = 3, kMaxLines = 12;
  for (size_t i = first > kContext ? first - kContext : 0; i < first; ++i) {
    absl::StrAppend(&out, "  ", e[i], "\n");
  }
  for (size_t i = first; i < e_end && i < first + kMaxLines; ++i) {
    absl::StrAppend(&out, "- ", e[i], "\n");
  }
  if (e_end > first + kMaxLines) {
    absl::StrAppend(&out, "- ... (", e_end - first - kMaxLines,
                    " more expected lines)\n");
  }
  for (size_t i = first; i < a_end && i < first + kMaxLines; ++i) {
    absl::StrAppend(&out, "+ ", a[i], "\n");
  }
  if (a_end > first + kMaxLines) {
    absl::StrAppend(&out, "+ ... (", a_end - first - kMaxLines,
                    " more actual lines)\n");
  }
  for (size_t i = e_end; i < e.size() && i < e_end + kContext; ++i) {
    absl::StrAppend(&out, "  ", e[i], "\n");
  }
  if (e.size() == a.size() && e_end == first && a_end == first) {
    // Same lines, different bytes: only a trailing newline differs.
    absl::StrAppend(&out, "(the files differ only in the final newline)\n");
  }
  return out;
}

}  // namespace tpusim::tools
