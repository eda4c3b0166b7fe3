#include "scenarios/pipeline_builder.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/example_parser.h"
#include "strategy/data/glob.h"
#include "strategy/data/sparse.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::scenarios {
namespace {

using data::Dataset;
using data::Element;
using data::ElementSpec;
using runtime::DType;
using runtime::Shape;
using runtime::Tensor;
using runtime::TensorSpec;

// ---- synthetic TFRecord files ----

// FNV-1a 64 of the definition (stable across runs and machines).
uint64_t Fingerprint(const FileSet& set) {
  const std::string key =
      absl::StrCat("tpusim-fileset-v1|", set.name(), "|", set.num_files(), "|",
                   set.records_per_file(), "|", set.float_feature() ? 1 : 0,
                   set.compression_type().empty()
                       ? ""
                       : absl::StrCat("|", set.compression_type()),
                   set.label_feature() ? "|label" : "",
                   set.varlen_feature() ? "|varlen" : "");
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Resolve(const LoadedScenario& s, const std::string& path) {
  return ResolveScenarioPath(s, path);
}

// ---- inline tensors ----

absl::StatusOr<Tensor> LiteralTensor(const TensorLiteral& lit,
                                     const std::string& path) {
  const std::string dtype_name = lit.has_dtype() ? lit.dtype() : "int64";
  TPUSIM_ASSIGN_OR_RETURN(DType dtype, runtime::DTypeFromName(dtype_name));
  const int64_t count = lit.int_values_size() + lit.float_values_size() +
                        lit.string_values_size();
  Shape shape = lit.scalar() ? Shape() : Shape({count});
  if (lit.shape_size() > 0)
    shape = Shape(std::vector<int64_t>(lit.shape().begin(), lit.shape().end()));
  auto ints = [&](int64_t lo, int64_t hi) -> absl::Status {
    for (int i = 0; i < lit.int_values_size(); ++i) {
      if (lit.int_values(i) < lo || lit.int_values(i) > hi) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".int_values[", i, "]=", lit.int_values(i),
                         ": out of range for ", dtype_name));
      }
    }
    return absl::OkStatus();
  };
  switch (dtype) {
    case DType::kI64:
      return Tensor::FromVector<int64_t>(
          shape, std::vector<int64_t>(lit.int_values().begin(),
                                      lit.int_values().end()));
    case DType::kI32:
      TPUSIM_RETURN_IF_ERROR(ints(std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max()));
      return Tensor::FromVector<int32_t>(
          shape, std::vector<int32_t>(lit.int_values().begin(),
                                      lit.int_values().end()));
    case DType::kU8:
      TPUSIM_RETURN_IF_ERROR(ints(0, 255));
      return Tensor::FromVector<uint8_t>(
          shape, std::vector<uint8_t>(lit.int_values().begin(),
                                      lit.int_values().end()));
    case DType::kF32:
      return Tensor::FromVector<float>(
          shape, std::vector<float>(lit.float_values().begin(),
                                    lit.float_values().end()));
    case DType::kF64:
      return Tensor::FromVector<double>(
          shape, std::vector<double>(lit.float_values().begin(),
                                     lit.float_values().end()));
    case DType::kBF16: {
      std::vector<runtime::BFloat16> v;
      for (double d : lit.float_values()) {
        v.push_back(runtime::BFloat16::FromFloat(static_cast<float>(d)));
      }
      return Tensor::FromVector<runtime::BFloat16>(shape, std::move(v));
    }
    case DType::kBytes:
      return Tensor::FromVector<std::string>(
          shape, std::vector<std::string>(lit.string_values().begin(),
                                          lit.string_values().end()));
  }
  return absl::InternalError(
      absl::StrCat(path, ": unhandled dtype ", dtype_name));
}

absl::StatusOr<data::TensorRefNest> Components(const TensorsStage& t,
                                               const std::string& path) {
  std::vector<Tensor> tensors;
  for (int i = 0; i < t.component_size(); ++i) {
    TPUSIM_ASSIGN_OR_RETURN(
        Tensor tensor,
        LiteralTensor(t.component(i),
                      absl::StrCat(path, ".component[", i, "]")));
    tensors.push_back(std::move(tensor));
  }
  if (t.component(0).has_key()) {
    std::vector<std::pair<std::string, data::TensorRefNest>> items;
    for (int i = 0; i < t.component_size(); ++i) {
      items.emplace_back(t.component(i).key(),
                         data::TensorRefNest(data::TensorRef(tensors[i])));
    }
    return data::TensorRefNest::Dict(std::move(items));
  }
  if (tensors.size() == 1)
    return data::TensorRefNest(data::TensorRef(tensors[0]));
  std::vector<data::TensorRefNest> children;
  for (Tensor& tensor : tensors)
    children.emplace_back(data::TensorRef(std::move(tensor)));
  return data::TensorRefNest::Tuple(std::move(children));
}

// ---- built-in map functions and predicates ----

template <typename T, typename IntOp, typename FloatOp>
Tensor MapValues(const Tensor& t, IntOp int_op, FloatOp float_op) {
  absl::Span<const T> in = t.values<T>();
  std::vector<T> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = static_cast<T>(float_op(static_cast<double>(in[i])));
    } else {
      out[i] = static_cast<T>(int_op(static_cast<int64_t>(in[i])));
    }
  }
  return Tensor::FromVector<T>(t.shape(), std::move(out));
}

// Applies an elementwise numeric function to every leaf.
template <typename IntOp, typename FloatOp>
absl::StatusOr<Element> Elementwise(const Element& e,
                                    const std::string& fn_name, IntOp int_op,
                                    FloatOp float_op,
                                    const ElementSpec* spec = nullptr) {
  std::vector<Tensor> leaves;
  const std::vector<const TensorSpec*> specs =
      spec != nullptr ? spec->Flatten() : std::vector<const TensorSpec*>();
  for (const auto& [path, leaf] : e.FlattenWithPaths()) {
    const Tensor& t = *leaf;
    if (!t.has_data()) {
      leaves.push_back(t);
      continue;
    }
    const size_t k = leaves.size();
    if (k < specs.size() && specs[k]->sparse.has_value()) {
      // An elementwise op on a SparseTensor maps its values.
      TPUSIM_ASSIGN_OR_RETURN(
          Tensor mapped,
          data::MapSparseValues(
              t, *specs[k], path,
              [&](const Tensor& values) -> absl::StatusOr<Tensor> {
                TPUSIM_ASSIGN_OR_RETURN(
                    Element m,
                    Elementwise(Element(values), fn_name, int_op, float_op));
                return m.leaf();
              }));
      leaves.push_back(std::move(mapped));
      continue;
    }
    switch (t.dtype()) {
      case DType::kI64:
        leaves.push_back(MapValues<int64_t>(t, int_op, float_op));
        break;
      case DType::kI32:
        leaves.push_back(MapValues<int32_t>(t, int_op, float_op));
        break;
      case DType::kU8:
        leaves.push_back(MapValues<uint8_t>(t, int_op, float_op));
        break;
      case DType::kF32:
        leaves.push_back(MapValues<float>(t, int_op, float_op));
        break;
      case DType::kF64:
        leaves.push_back(MapValues<double>(t, int_op, float_op));
        break;
      case DType::kBF16: {
        std::vector<runtime::BFloat16> out;
        for (runtime::BFloat16 v : t.values<runtime::BFloat16>()) {
          out.push_back(runtime::BFloat16::FromFloat(
              static_cast<float>(float_op(static_cast<double>(v.ToFloat())))));
        }
        leaves.push_back(
            Tensor::FromVector<runtime::BFloat16>(t.shape(), std::move(out)));
        break;
      }
      case DType::kBytes:
        return absl::InvalidArgumentError(
            absl::StrCat("map fn \"", fn_name, "\": component \"", path,
                         "\" has dtype string; the function takes numbers"));
    }
  }
  return e.Unflatten(std::move(leaves));
}

// Two's-complement wrap-around like TF's integer ops, without signed-overflow
// UB.
using common::WrapAdd;
using common::WrapMul;

// A scalar of `dtype` holding `v` (a padding value).
absl::StatusOr<runtime::Tensor> ScalarOfDType(runtime::DType dtype, double v) {
  switch (dtype) {
    case runtime::DType::kF32:
      return runtime::Tensor::Scalar<float>(static_cast<float>(v));
    case runtime::DType::kF64:
      return runtime::Tensor::Scalar<double>(v);
    case runtime::DType::kBF16:
      return runtime::Tensor::Scalar<runtime::BFloat16>(
          runtime::BFloat16::FromFloat(static_cast<float>(v)));
    case runtime::DType::kI32:
      if (v != std::trunc(v)) break;
      return runtime::Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
    case runtime::DType::kI64:
      if (v != std::trunc(v)) break;
      return runtime::Tensor::Scalar<int64_t>(static_cast<int64_t>(v));
    case runtime::DType::kU8:
      if (v != std::trunc(v) || v < 0 || v > 255) break;
      return runtime::Tensor::Scalar<uint8_t>(static_cast<uint8_t>(v));
    case runtime::DType::kBytes:
      return absl::InvalidArgumentError(
          "a string component cannot take a numeric padding value");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "not a value of the component's dtype ", runtime::DTypeName(dtype)));
}

absl::StatusOr<data::MapFunction> BuiltinMap(const MapStage& m,
                                             const ElementSpec& input_spec,
                                             const std::string& path) {
  data::MapFunction f;
  f.name = m.fn();
  f.cost = common::Picoseconds::FromNanoseconds(m.cpu_cost_ns());
  if (m.has_num_parallel_calls()) f.num_parallel_calls = m.num_parallel_calls();
  if (m.has_deterministic()) f.deterministic = m.deterministic();
  f.output_spec = input_spec;
  const std::string fn = m.fn();
  if (fn == "identity") {
    f.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
  } else if (fn == "square") {
    f.fn = [fn, spec = input_spec](const Element& e) {
      return Elementwise(
          e, fn, [](int64_t v) { return WrapMul(v, v); },
          [](double v) { return v * v; }, &spec);
    };
  } else if (fn == "negate") {
    f.fn = [fn, spec = input_spec](const Element& e) {
      return Elementwise(
          e, fn, [](int64_t v) { return WrapMul<int64_t>(v, -1); },
          [](double v) { return -v; }, &spec);
    };
  } else if (fn == "add_one") {
    f.fn = [fn, spec = input_spec](const Element& e) {
      return Elementwise(
          e, fn, [](int64_t v) { return WrapAdd<int64_t>(v, 1); },
          [](double v) { return v + 1; }, &spec);
    };
  } else if (fn == "parse_example") {
    data::FeatureSpec features;
    for (const FeatureSpec& spec : m.feature()) {
      TPUSIM_ASSIGN_OR_RETURN(
          DType dtype,
          runtime::DTypeFromName(spec.has_dtype() ? spec.dtype() : "int64"));
      Shape shape(
          std::vector<int64_t>(spec.shape().begin(), spec.shape().end()));
      if (spec.kind() == "var_len") {
        features.emplace_back(spec.name(), data::VarLenFeature{dtype});
      } else if (spec.kind() == "fixed_len_sequence") {
        features.emplace_back(
            spec.name(),
            data::FixedLenSequenceFeature{
                dtype, std::move(shape), spec.allow_missing(), {}});
      } else {
        features.emplace_back(
            spec.name(), data::FixedLenFeature{dtype, std::move(shape), {}});
      }
    }
    // tf.io.parse_single_example on string scalars, tf.io.parse_example on
    // string vectors (e.g. after batch).
    if (!input_spec.is_leaf() || input_spec.leaf().dtype != DType::kBytes ||
        !input_spec.leaf().shape.rank_known() ||
        input_spec.leaf().shape.rank() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ".fn=\"parse_example\": the input elements must be "
                       "serialized examples "
                       "(a string scalar or vector), got ",
                       data::ElementSpecToString(input_spec)));
    }
    data::MapFunction parse =
        input_spec.leaf().shape.rank() == 0
            ? data::ParseSingleExampleFn(std::move(features))
            : data::ParseExampleFn(std::move(features));
    parse.cost = f.cost;
    return parse;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".fn=\"", fn, "\": unknown"));
  }
  return f;
}

data::PredicateFn BuiltinPredicate(const std::string& name) {
  return [name](const Element& e) -> absl::StatusOr<bool> {
    if (!e.is_leaf() || e.leaf().rank() != 0 ||
        !runtime::IsInteger(e.leaf().dtype()) || !e.leaf().has_data()) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter predicate \"", name,
                       "\" needs elements that are one integer scalar, got ",
                       data::ElementSpecToString(data::SpecOf(e))));
    }
    const int64_t v = e.leaf().AsInt64(0);
    if (name == "even") return v % 2 == 0;
    if (name == "odd") return v % 2 != 0;
    return v > 0;  // "positive"
  };
}

// ---- the builder ----

class Builder {
 public:
  Builder(const LoadedScenario& s, const FileSetPaths& files,
          const std::optional<data::InputContext>& ctx)
      : s_(s), files_(files), ctx_(ctx) {}

  template <typename Stages>
  absl::StatusOr<Dataset> Build(const Stages& stages, const std::string& path) {
    Dataset ds;
    for (int i = 0; i < stages.size(); ++i) {
      const std::string p = absl::StrCat(path, "[", i, "]");
      TPUSIM_ASSIGN_OR_RETURN(ds,
                              Apply(i == 0 ? nullptr : &ds, stages.Get(i), p));
      if (stages.Get(i).has_host_cost_ns()) {
        ds = ds.WithHostCost(
            common::Picoseconds::FromNanoseconds(stages.Get(i).host_cost_ns()));
      }
      if (!ds.ok()) return ds;  // TF would raise here; later stages never run
    }
    return ds;
  }

  // `stages` applied to `start` (a function body: every stage transforms).
  template <typename Stages>
  absl::StatusOr<Dataset> BuildFrom(Dataset start, const Stages& stages,
                                    const std::string& path) {
    Dataset ds = std::move(start);
    for (int i = 0; i < stages.size() && ds.ok(); ++i) {
      TPUSIM_ASSIGN_OR_RETURN(
          ds, Apply(&ds, stages.Get(i), absl::StrCat(path, "[", i, "]")));
    }
    return ds;
  }

 private:
  absl::StatusOr<std::vector<std::string>> Files(const ReaderStage& r,
                                                 const std::string& path) {
    if (r.has_file_set()) return FileSet(r.file_set(), path);
    if (r.has_glob()) {
      const std::string pattern = Resolve(s_, r.glob());
      absl::StatusOr<std::vector<std::string>> found =
          data::MatchingFiles({pattern});
      if (!found.ok()) {
        return ScenarioError(s_, absl::StrCat(path, ".glob"),
                             absl::StrCat("\"", r.glob(), "\""),
                             found.status().message());
      }
      std::vector<std::string> matches = *std::move(found);
      if (matches.empty()) {
        return ScenarioError(s_, absl::StrCat(path, ".glob"),
                             absl::StrCat("\"", r.glob(), "\""),
                             absl::StrCat("no file matches \"", pattern, "\""));
      }
      return matches;
    }
    std::vector<std::string> out;
    for (const std::string& f : r.file()) out.push_back(Resolve(s_, f));
    return out;
  }

  absl::StatusOr<std::vector<std::string>> FileSet(const std::string& name,
                                                   const std::string& path) {
    auto it = files_.find(name);
    if (it == files_.end()) {
      return ScenarioError(s_, absl::StrCat(path, ".file_set"),
                           absl::StrCat("\"", name, "\""),
                           "the file set was not generated");
    }
    return it->second;
  }

  static data::FixedLengthRecordOptions FixedOptions(int64_t record,
                                                     int64_t header,
                                                     int64_t footer) {
    data::FixedLengthRecordOptions o;
    o.record_bytes = record;
    o.header_bytes = header;
    o.footer_bytes = footer;
    return o;
  }

  absl::StatusOr<Dataset> Reader(const Dataset* input, const Stage& st,
                                 const ReaderStage& r,
                                 const std::string& path) {
    std::optional<int64_t> parallel;
    if (r.has_num_parallel_reads()) parallel = r.num_parallel_reads();
    if (input == nullptr) {
      TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files, Files(r, path));
      switch (st.kind_case()) {
        case Stage::kTfrecord: {
          data::TFRecordOptions o;
          o.compression_type = r.compression_type();
          o.num_parallel_reads = parallel;
          return Dataset::TFRecord(std::move(files), o);
        }
        case Stage::kTextLine:
          return Dataset::TextLine(std::move(files), parallel);
        default: {
          data::FixedLengthRecordOptions o = FixedOptions(
              r.record_bytes(), r.header_bytes(), r.footer_bytes());
          o.num_parallel_reads = parallel;
          return Dataset::FixedLengthRecord(std::move(files), o);
        }
      }
    }
    switch (st.kind_case()) {
      case Stage::kTfrecord: {
        data::TFRecordOptions o;
        o.compression_type = r.compression_type();
        o.num_parallel_reads = parallel;
        return Dataset::TFRecord(*input, o);
      }
      case Stage::kTextLine:
        return Dataset::TextLine(*input, parallel);
      default: {
        data::FixedLengthRecordOptions o =
            FixedOptions(r.record_bytes(), r.header_bytes(), r.footer_bytes());
        o.num_parallel_reads = parallel;
        return Dataset::FixedLengthRecord(*input, o);
      }
    }
  }

  absl::StatusOr<Dataset> Interleave(const Dataset& input,
                                     const InterleaveStage& in, bool interleave,
                                     const std::string& path) {
    const ElementSpec& spec = input.element_spec();
    if (!spec.is_leaf() || spec.leaf().dtype != DType::kBytes ||
        spec.leaf().shape.rank_known() == false ||
        spec.leaf().shape.rank() > 1) {
      return Dataset::FromError(absl::InvalidArgumentError(absl::StrCat(
          path, ": the ", in.reader(),
          " reader needs file names (string scalars) as input, got ",
          data::ElementSpecToString(spec))));
    }
    const std::string reader = in.reader();
    const data::FixedLengthRecordOptions fixed =
        FixedOptions(in.record_bytes(), in.header_bytes(), in.footer_bytes());
    data::DatasetFn fn = [reader, fixed](const data::FunctionArg& arg) {
      if (reader == "tfrecord") return Dataset::TFRecordReader(arg.leaf());
      if (reader == "text_line") return Dataset::TextLineReader(arg.leaf());
      return Dataset::FixedLengthRecordReader(arg.leaf(), fixed);
    };
    if (!interleave) return input.FlatMap(fn);
    return input.Interleave(
        fn, in.has_cycle_length() ? in.cycle_length() : data::kAutotune,
        in.has_block_length() ? in.block_length() : 1);
  }

  absl::StatusOr<Dataset> Apply(const Dataset* in, const Stage& st,
                                const std::string& path) {
    switch (st.kind_case()) {
      case Stage::kRange: {
        const RangeStage& r = st.range();
        return Dataset::Range(r.start(), r.stop(), r.has_step() ? r.step() : 1);
      }
      case Stage::kFromTensorSlices: {
        TPUSIM_ASSIGN_OR_RETURN(
            data::TensorRefNest c,
            Components(st.from_tensor_slices(),
                       absl::StrCat(path, ".from_tensor_slices")));
        return Dataset::FromTensorSlices(std::move(c));
      }
      case Stage::kFromTensors: {
        TPUSIM_ASSIGN_OR_RETURN(
            data::TensorRefNest c,
            Components(st.from_tensors(), absl::StrCat(path, ".from_tensors")));
        return Dataset::FromTensors(std::move(c));
      }
      case Stage::kListFiles: {
        const ListFilesStage& l = st.list_files();
        std::vector<std::string> patterns;
        if (l.has_file_set()) {
          TPUSIM_ASSIGN_OR_RETURN(
              patterns,
              FileSet(l.file_set(), absl::StrCat(path, ".list_files")));
        }
        for (const std::string& p : l.pattern())
          patterns.push_back(Resolve(s_, p));
        std::optional<uint64_t> seed;
        if (l.has_seed()) seed = l.seed();
        return Dataset::ListFiles(std::move(patterns),
                                  l.has_shuffle() ? l.shuffle() : true, seed);
      }
      case Stage::kTfrecord:
        return Reader(in, st, st.tfrecord(), absl::StrCat(path, ".tfrecord"));
      case Stage::kTextLine:
        return Reader(in, st, st.text_line(), absl::StrCat(path, ".text_line"));
      case Stage::kFixedLength:
        return Reader(in, st, st.fixed_length(),
                      absl::StrCat(path, ".fixed_length"));
      case Stage::kZip: {
        std::vector<Dataset> inputs;
        for (int i = 0; i < st.zip().input_size(); ++i) {
          TPUSIM_ASSIGN_OR_RETURN(
              Dataset d,
              Build(st.zip().input(i).pipeline(),
                    absl::StrCat(path, ".zip.input[", i, "].pipeline")));
          if (!d.ok()) return d;
          inputs.push_back(std::move(d));
        }
        Dataset zipped = Dataset::Zip(inputs);
        if (!st.zip().input(0).has_key() || !zipped.ok()) return zipped;
        // Dict zip (tf.data.Dataset.zip({"a": a, "b": b})): zip as a tuple,
        // then name the components.
        std::vector<std::string> keys;
        for (const Pipeline& p : st.zip().input()) keys.push_back(p.key());
        std::vector<std::pair<std::string, ElementSpec>> spec_items;
        for (size_t i = 0; i < keys.size(); ++i) {
          spec_items.emplace_back(keys[i], zipped.element_spec().children()[i]);
        }
        data::MapFunction named;
        named.name = "zip_dict";
        named.output_spec = ElementSpec::Dict(std::move(spec_items));
        named.fn = [keys](const Element& e) -> absl::StatusOr<Element> {
          std::vector<std::pair<std::string, Element>> items;
          for (size_t i = 0; i < keys.size(); ++i)
            items.emplace_back(keys[i], e.children()[i]);
          return Element::Dict(std::move(items));
        };
        return zipped.Map(std::move(named));
      }
      default:
        break;
    }
    const Dataset& ds = *in;
    switch (st.kind_case()) {
      case Stage::kBatch: {
        int64_t size = st.batch().batch_size();
        if (st.batch().use_global_batch()) {
          size = s_.proto.global_batch_size();
          if (ctx_.has_value()) {
            absl::StatusOr<int64_t> per_replica =
                ctx_->GetPerReplicaBatchSize(size);
            if (!per_replica.ok())
              return Dataset::FromError(per_replica.status());
            size = *per_replica;
          }
        }
        return ds.Batch(size, st.batch().drop_remainder());
      }
      case Stage::kShard:
        if (st.shard().by_input_context()) {
          return ds.Shard(ctx_->num_input_pipelines(),
                          ctx_->input_pipeline_id());
        }
        return ds.Shard(st.shard().num_shards(), st.shard().index());
      case Stage::kRepeat:
        return ds.Repeat(st.repeat().has_count() ? st.repeat().count() : -1);
      case Stage::kMap: {
        absl::StatusOr<data::MapFunction> fn =
            BuiltinMap(st.map(), ds.element_spec(), absl::StrCat(path, ".map"));
        if (!fn.ok()) return Dataset::FromError(fn.status());
        return ds.Map(*std::move(fn));
      }
      case Stage::kFilter:
        return ds.Filter(BuiltinPredicate(st.filter().predicate()));
      case Stage::kShuffle: {
        const ShuffleStage& s = st.shuffle();
        return ds.Shuffle(s.buffer_size(), s.seed(),
                          s.has_reshuffle_each_iteration()
                              ? s.reshuffle_each_iteration()
                              : true);
      }
      case Stage::kTake:
        return ds.Take(st.take().count());
      case Stage::kSkip:
        return ds.Skip(st.skip().count());
      case Stage::kPrefetch:
        return ds.Prefetch(st.prefetch().has_buffer_size()
                               ? st.prefetch().buffer_size()
                               : data::kAutotune);
      case Stage::kCache:
        return ds.Cache();
      case Stage::kInterleave:
        return Interleave(ds, st.interleave(), true,
                          absl::StrCat(path, ".interleave"));
      case Stage::kFlatMap:
        return Interleave(ds, st.flat_map(), false,
                          absl::StrCat(path, ".flat_map"));
      case Stage::kConcatenate: {
        TPUSIM_ASSIGN_OR_RETURN(
            Dataset other, Build(st.concatenate().pipeline(),
                                 absl::StrCat(path, ".concatenate.pipeline")));
        if (!other.ok()) return other;
        return ds.Concatenate(other);
      }
      case Stage::kPaddedBatch: {
        const PaddedBatchStage& b = st.padded_batch();
        std::vector<runtime::Shape> shapes;
        for (const PaddedShape& p : b.padded_shape()) {
          shapes.push_back(runtime::Shape(
              std::vector<int64_t>(p.dim().begin(), p.dim().end())));
        }
        std::vector<runtime::Tensor> values;
        if (b.padding_value_size() > 0) {
          std::vector<const runtime::TensorSpec*> specs;
          for (const runtime::TensorSpec* t : ds.element_spec().Flatten()) {
            specs.push_back(t);
          }
          if (static_cast<size_t>(b.padding_value_size()) != specs.size()) {
            return Dataset::FromError(absl::InvalidArgumentError(absl::StrCat(
                path, ".padded_batch.padding_value: ", b.padding_value_size(),
                " values for ", specs.size(), " components")));
          }
          for (int i = 0; i < b.padding_value_size(); ++i) {
            absl::StatusOr<runtime::Tensor> v =
                ScalarOfDType(specs[i]->dtype, b.padding_value(i));
            if (!v.ok()) {
              return Dataset::FromError(absl::InvalidArgumentError(
                  absl::StrCat(path, ".padded_batch.padding_value[", i,
                               "]=", b.padding_value(i), ": ",
                               v.status().message())));
            }
            values.push_back(*std::move(v));
          }
        }
        return ds.PaddedBatch(b.batch_size(), std::move(shapes),
                              std::move(values), b.drop_remainder());
      }
      case Stage::kUnbatch:
        return ds.Unbatch();
      case Stage::kWindow: {
        const WindowStage& w = st.window();
        const std::string body_path = absl::StrCat(path, ".window.flat_map");
        absl::Status body_error;
        Dataset out =
            ds.Window(w.size(),
                      w.has_shift() ? std::optional<int64_t>(w.shift())
                                    : std::nullopt,
                      w.has_stride() ? w.stride() : 1, w.drop_remainder())
                .FlatMap([&](const data::WindowArg& arg) {
                  // ds.window(...).flat_map(lambda *w: zip(w).<stages>)
                  absl::StatusOr<Dataset> body =
                      BuildFrom(arg.Zip(), w.flat_map(), body_path);
                  if (!body.ok()) {
                    body_error = body.status();
                    return Dataset::FromError(body.status());
                  }
                  return *std::move(body);
                });
        // A scenario problem found while tracing (not a TF error) stays one.
        if (!body_error.ok()) return body_error;
        return out;
      }
      case Stage::kMapAndBatch: {
        const MapAndBatchStage& m = st.map_and_batch();
        absl::StatusOr<data::MapFunction> fn =
            BuiltinMap(m.map(), ds.element_spec(),
                       absl::StrCat(path, ".map_and_batch.map"));
        if (!fn.ok()) return Dataset::FromError(fn.status());
        std::optional<int64_t> parallel;
        if (m.map().has_num_parallel_calls())
          parallel = m.map().num_parallel_calls();
        return ds.MapAndBatch(*std::move(fn), m.batch_size(),
                              m.drop_remainder(), parallel);
      }
      default:
        break;
    }
    return ScenarioError(s_, path, "", "stage cannot be built here");
  }

  const LoadedScenario& s_;
  const FileSetPaths& files_;
  const std::optional<data::InputContext>& ctx_;
};

}  // namespace

std::string DefaultDataDir() {
  if (const char* dir = std::getenv("TPUSIM_DATA_DIR");
      dir != nullptr && dir[0] != '\0') {
    return dir;
  }
  const char* tmp = std::getenv("TMPDIR");
  return absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                      "/tpusim-data");
}

std::string SyntheticExample(const FileSet& set, int file, int record) {
  const int64_t id = int64_t{file} * set.records_per_file() + record;
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  features["file"].mutable_int64_list()->add_value(file);
  features["id"].mutable_int64_list()->add_value(id);
  if (set.float_feature()) {
    features["x"].mutable_float_list()->add_value(static_cast<float>(id) /
                                                  2.0f);
  }
  if (set.label_feature()) {
    features["y"].mutable_float_list()->add_value(static_cast<float>(id % 4));
  }
  if (set.varlen_feature() && id % 4 != 0) {
    auto& tokens = *features["tokens"].mutable_int64_list();
    for (int64_t j = 0; j < id % 4; ++j) tokens.add_value(10 * id + j);
  }
  // Deterministic serialization writes map entries in key order, so the bytes
  // are stable.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }
  return out;
}

namespace {

// The names of the file sets the pipeline's stages read (every string field
// named file_set of a message under `pipeline`, nested pipelines included),
// found with an explicit stack rather than recursion.
std::set<std::string> FileSetsRead(const Scenario& scenario) {
  std::set<std::string> names;
  std::vector<const google::protobuf::Message*> stack;
  for (const Stage& stage : scenario.pipeline()) stack.push_back(&stage);
  while (!stack.empty()) {
    const google::protobuf::Message& m = *stack.back();
    stack.pop_back();
    const google::protobuf::Reflection& r = *m.GetReflection();
    std::vector<const google::protobuf::FieldDescriptor*> fields;
    r.ListFields(m, &fields);
    for (const google::protobuf::FieldDescriptor* f : fields) {
      if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (f->is_repeated()) {
          for (int i = 0; i < r.FieldSize(m, f); ++i)
            stack.push_back(&r.GetRepeatedMessage(m, f, i));
        } else {
          stack.push_back(&r.GetMessage(m, f));
        }
      } else if (f->name() == "file_set" && !f->is_repeated() &&
                 f->cpp_type() ==
                     google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
        names.insert(r.GetString(m, f));
      }
    }
  }
  return names;
}

// "<source>:LINE: file_set[i]" (the line when the scenario was parsed from
// text).
std::string FileSetWhere(const LoadedScenario& s, int i) {
  std::string where = s.source_name;
  if (s.locations != nullptr) {
    const google::protobuf::FieldDescriptor* f =
        Scenario::descriptor()->FindFieldByName("file_set");
    const google::protobuf::TextFormat::ParseLocation loc =
        s.locations->GetLocation(f, i);
    if (loc.line >= 0) absl::StrAppend(&where, ":", loc.line + 1);
  }
  return absl::StrCat(where, ": file_set[", i, "]");
}

constexpr char kManifest[] = "MANIFEST";

// The manifest's first lines: the format and the definition.
std::string ManifestHeader(const FileSet& set) {
  return absl::StrCat(
      "tpusim-fileset-v1\nname=", set.name(), "\nnum_files=", set.num_files(),
      "\nrecords_per_file=", set.records_per_file(),
      "\nfloat_feature=", set.float_feature() ? 1 : 0, "\n",
      set.compression_type().empty()
          ? ""
          : absl::StrCat("compression_type=", set.compression_type(), "\n"),
      set.label_feature() ? "label_feature=1\n" : "",
      set.varlen_feature() ? "varlen_feature=1\n" : "");
}

std::string FileName(const FileSet& set, int f) {
  return absl::StrFormat("%s-%05d-of-%05d.tfrecord", set.name(), f,
                         set.num_files());
}

// Whether `dir` holds a complete copy of `set`: a manifest matching the
// definition that lists every file, each present with the listed size.
bool CompleteSetIn(const std::string& dir, const FileSet& set) {
  std::ifstream in(absl::StrCat(dir, "/", kManifest), std::ios::binary);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  const std::string manifest = text.str();
  const std::string header = ManifestHeader(set);
  if (manifest.compare(0, header.size(), header) != 0) return false;
  std::istringstream rest(manifest.substr(header.size()));
  for (int f = 0; f < set.num_files(); ++f) {
    std::string name;
    uintmax_t size = 0;
    if (!(rest >> name >> size) || name != FileName(set, f)) return false;
    std::error_code ec;
    const std::string path = absl::StrCat(dir, "/", name);
    if (!std::filesystem::is_regular_file(path, ec) ||
        std::filesystem::file_size(path, ec) != size || ec) {
      return false;
    }
  }
  std::string extra;
  return !(rest >> extra);
}

// Writes `bytes` to `path` through a temporary file renamed into place.
absl::Status WriteAtomically(const std::string& path, const std::string& bytes,
                             const FileSet& set) {
  // Unique per process so that concurrent runs never write the same
  // temporary file.
  const std::string tmp =
      absl::StrCat(path, ".tmp.", static_cast<long>(::getpid()));
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!o) {
      return absl::PermissionDeniedError(absl::StrCat(
          "file_set \"", set.name(), "\": cannot write \"", tmp, "\""));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("file_set \"", set.name(), "\": cannot rename to \"", path,
                     "\": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t FileSetMaxBytes(const FileSet& set) {
  if (set.num_files() <= 0 || set.records_per_file() <= 0) return 0;
  // The last record has the largest file index and id, so the longest
  // varints: its size bounds every record's.
  const int64_t record = static_cast<int64_t>(
      data::EncodeTFRecord(SyntheticExample(set, set.num_files() - 1,
                                            set.records_per_file() - 1))
          .size());
  // At most 10000 x 1000000 records (the validator's bounds): no overflow.
  int64_t per_file = int64_t{set.records_per_file()} * record;
  // A compressed file is at most zlib's bound (compressBound: n + n/4096 +
  // n/16384 + n/2^25 + 13) plus the GZIP header and trailer (18 bytes).
  if (!set.compression_type().empty()) {
    per_file +=
        per_file / 4096 + per_file / 16384 + per_file / (1 << 25) + 13 + 18;
  }
  return int64_t{set.num_files()} * per_file;
}

absl::StatusOr<FileSetPaths> MaterializeFileSets(const LoadedScenario& scenario,
                                                 const std::string& data_dir) {
  const std::set<std::string> read = FileSetsRead(scenario.proto);
  int64_t total = 0;
  for (int i = 0; i < scenario.proto.file_set_size(); ++i) {
    const FileSet& set = scenario.proto.file_set(i);
    if (read.count(set.name()) == 0) continue;
    const int64_t bytes = FileSetMaxBytes(set);
    total += bytes;
    if (total > kMaxFileSetBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(FileSetWhere(scenario, i), " \"", set.name(),
                       "\" (num_files=", set.num_files(), ", records_per_file=",
                       set.records_per_file(), ") takes up to ", bytes,
                       " bytes, and the file sets the pipeline "
                       "reads would total up to ",
                       total, "; allowed: at most ", kMaxFileSetBytes,
                       " bytes in all (tpusim's cap)"));
    }
  }
  FileSetPaths out;
  for (const FileSet& set : scenario.proto.file_set()) {
    if (read.count(set.name()) == 0) continue;  // never written
    const std::string dir =
        absl::StrFormat("%s/%s-%016x", data_dir, set.name(), Fingerprint(set));
    std::vector<std::string>& paths = out[set.name()];
    for (int f = 0; f < set.num_files(); ++f)
      paths.push_back(absl::StrCat(dir, "/", FileName(set, f)));
    if (CompleteSetIn(dir, set)) continue;  // reused as it is
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          "file_set \"", set.name(), "\": cannot create directory \"", dir,
          "\": ", ec.message()));
    }
    // The manifest goes first out of the way and is written last, so that a
    // set interrupted half-way is never taken for complete.
    std::filesystem::remove(absl::StrCat(dir, "/", kManifest), ec);
    std::string manifest = ManifestHeader(set);
    for (int f = 0; f < set.num_files(); ++f) {
      std::string bytes;
      for (int r = 0; r < set.records_per_file(); ++r) {
        bytes += data::EncodeTFRecord(SyntheticExample(set, f, r));
      }
      TPUSIM_ASSIGN_OR_RETURN(
          const data::Compression compression,
          data::ParseCompressionType(
              set.compression_type(),
              absl::StrCat("file_set \"", set.name(), "\": compression_type")));
      bytes = data::CompressAll(compression, bytes);
      TPUSIM_RETURN_IF_ERROR(WriteAtomically(paths[f], bytes, set));
      absl::StrAppend(&manifest, FileName(set, f), " ", bytes.size(), "\n");
    }
    TPUSIM_RETURN_IF_ERROR(
        WriteAtomically(absl::StrCat(dir, "/", kManifest), manifest, set));
  }
  return out;
}

data::AutoShardPolicy ShardPolicyOf(const Scenario& scenario) {
  switch (scenario.shard_policy()) {
    case Scenario::FILE:
      return data::AutoShardPolicy::kFile;
    case Scenario::DATA:
      return data::AutoShardPolicy::kData;
    case Scenario::OFF:
      return data::AutoShardPolicy::kOff;
    case Scenario::AUTO:
    default:
      return data::AutoShardPolicy::kAuto;
  }
}

absl::StatusOr<data::Dataset> BuildPipeline(
    const LoadedScenario& scenario, const FileSetPaths& file_sets,
    const std::optional<data::InputContext>& input_context) {
  Builder builder(scenario, file_sets, input_context);
  TPUSIM_ASSIGN_OR_RETURN(Dataset ds,
                          builder.Build(scenario.proto.pipeline(), "pipeline"));
  if (!ds.ok()) return ds;
  data::Options options = ds.options();
  options.auto_shard_policy = ShardPolicyOf(scenario.proto);
  return ds.WithOptions(options);
}

}  // namespace tpusim::scenarios
