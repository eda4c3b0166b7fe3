#include "strategy/runtime/program.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "strategy/runtime/program.pb.h"

namespace tpusim::runtime {
namespace {

std::string Ints(absl::Span<const int64_t> v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

// ---- proto helpers ----

void TypeToProto(const ValueType& t, proto::ValueTypeProto* out) {
  out->set_dtype(std::string(DTypeName(t.dtype)));
  for (int64_t d : t.shape.dims()) out->add_dims(d);
  out->set_dynamic_dims(t.dynamic_dims);
}

absl::StatusOr<ValueType> TypeFromProto(const proto::ValueTypeProto& p) {
  TPUSIM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(p.dtype()));
  return ValueType(
      dtype, Shape(std::vector<int64_t>(p.dims().begin(), p.dims().end())),
      p.dynamic_dims());
}

void TensorToProto(const Tensor& t, proto::TensorValueProto* out) {
  out->set_dtype(std::string(DTypeName(t.dtype())));
  for (int64_t d : t.shape().dims()) out->add_dims(d);
  if (!t.has_data()) {
    out->set_abstract(true);
    return;
  }
  if (t.dtype() == DType::kBytes) {
    for (const std::string& s : t.values<std::string>()) out->add_strings(s);
  } else {
    absl::Span<const uint8_t> raw = t.raw_bytes();
    out->set_data(
        std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
  }
}

absl::StatusOr<Tensor> TensorFromProto(const proto::TensorValueProto& p) {
  TPUSIM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(p.dtype()));
  Shape shape(std::vector<int64_t>(p.dims().begin(), p.dims().end()));
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "constant literal shape ", shape.ToString(), " must be fully defined"));
  }
  TPUSIM_RETURN_IF_ERROR(CheckedByteSize(dtype, shape).status());
  if (p.abstract()) return Tensor::Abstract(dtype, shape);
  // The sizes are checked against the proto's payload BEFORE the tensor is
  // allocated, so a huge shape with a small payload allocates nothing.
  const int64_t elements = shape.num_elements();
  if (dtype == DType::kBytes) {
    if (p.strings_size() != elements) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant literal has ", p.strings_size(),
                       " strings, shape needs ", elements));
    }
    Tensor t = Tensor::Zeros(dtype, shape);
    absl::Span<std::string> v = t.mutable_values<std::string>();
    for (int i = 0; i < p.strings_size(); ++i) v[i] = p.strings(i);
    return t;
  }
  const int64_t want = elements * DTypeSize(dtype);  // checked above
  if (static_cast<int64_t>(p.data().size()) != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant literal has ", p.data().size(), " data bytes, ",
                     DTypeName(dtype), shape.ToString(), " needs ", want));
  }
  Tensor t = Tensor::Zeros(dtype, shape);
  Tensor raw;
  // Write the bytes through the typed span of the right dtype.
  switch (dtype) {
    case DType::kF32:
      std::memcpy(t.mutable_values<float>().data(), p.data().data(), want);
      break;
    case DType::kF64:
      std::memcpy(t.mutable_values<double>().data(), p.data().data(), want);
      break;
    case DType::kBF16:
      std::memcpy(t.mutable_values<BFloat16>().data(), p.data().data(), want);
      break;
    case DType::kI32:
      std::memcpy(t.mutable_values<int32_t>().data(), p.data().data(), want);
      break;
    case DType::kI64:
      std::memcpy(t.mutable_values<int64_t>().data(), p.data().data(), want);
      break;
    case DType::kU8:
      std::memcpy(t.mutable_values<uint8_t>().data(), p.data().data(), want);
      break;
    case DType::kBytes:
      break;
  }
  return t;
}

absl::string_view PaddingName(Padding p) {
  return p == Padding::kSame ? "SAME" : "VALID";
}
absl::string_view ReduceName(CollectiveReduce r) {
  return r == CollectiveReduce::kMean ? "mean" : "sum";
}

// The attributes an op uses, as "name=value" strings (text form).
std::vector<std::string> AttrStrings(const Op& op, const Program& program) {
  const OpAttrs& a = op.attrs;
  std::vector<std::string> out;
  auto groups = [&]() {
    if (a.replica_groups.empty()) return;
    std::vector<std::string> gs;
    for (const auto& g : a.replica_groups) gs.push_back(Ints(g));
    out.push_back(
        absl::StrCat("replica_groups={", absl::StrJoin(gs, ","), "}"));
  };
  switch (op.code) {
    case OpCode::kParameter:
      out.push_back(absl::StrCat("index=", a.parameter_index));
      break;
    case OpCode::kConstant:
      out.push_back(absl::StrCat("value=", a.literal.DebugString(8)));
      break;
    case OpCode::kVariableRead:
    case OpCode::kVariableAssign:
    case OpCode::kVariableAssignAdd:
      out.push_back(absl::StrCat("slot=", a.variable_slot));
      break;
    case OpCode::kCast:
      out.push_back(absl::StrCat("dtype=", ShortDTypeName(a.dtype)));
      break;
    case OpCode::kDot:
      if (!a.dot.lhs_batch.empty())
        out.push_back("lhs_batch=" + Ints(a.dot.lhs_batch));
      if (!a.dot.rhs_batch.empty())
        out.push_back("rhs_batch=" + Ints(a.dot.rhs_batch));
      out.push_back("lhs_contracting=" + Ints(a.dot.lhs_contracting));
      out.push_back("rhs_contracting=" + Ints(a.dot.rhs_contracting));
      if (a.precision != Precision::kDefault)
        out.push_back(absl::StrCat("precision=", PrecisionName(a.precision)));
      break;
    case OpCode::kMaxPool2D:
      out.push_back("window=" + Ints(a.window));
      out.push_back("window_strides=" + Ints(a.window_strides));
      out.push_back(absl::StrCat("padding=", PaddingName(a.padding)));
      break;
    case OpCode::kConv2D:
      out.push_back("window_strides=" + Ints(a.window_strides));
      out.push_back(absl::StrCat("padding=", PaddingName(a.padding)));
      if (a.precision != Precision::kDefault)
        out.push_back(absl::StrCat("precision=", PrecisionName(a.precision)));
      break;
    case OpCode::kReduceSum:
    case OpCode::kReduceMean:
    case OpCode::kReduceMax:
      out.push_back("axes=" + Ints(a.axes));
      if (a.keepdims) out.push_back("keepdims=true");
      break;
    case OpCode::kReshape:
    case OpCode::kBroadcast:
      out.push_back("shape=" + Ints(a.shape));
      break;
    case OpCode::kTranspose:
      out.push_back("permutation=" + Ints(a.permutation));
      break;
    case OpCode::kSlice:
      out.push_back("start=" + Ints(a.start));
      out.push_back("limit=" + Ints(a.limit));
      if (!a.strides.empty()) out.push_back("strides=" + Ints(a.strides));
      break;
    case OpCode::kConcat:
    case OpCode::kGather:
      out.push_back(absl::StrCat("axis=", a.axis));
      break;
    case OpCode::kOneHot:
      out.push_back(absl::StrCat("depth=", a.depth));
      out.push_back(absl::StrCat("on_value=", a.on_value));
      out.push_back(absl::StrCat("off_value=", a.off_value));
      break;
    case OpCode::kAllReduce:
      out.push_back(absl::StrCat("reduce=", ReduceName(a.reduce)));
      groups();
      break;
    case OpCode::kAllGather:
      out.push_back(absl::StrCat("axis=", a.axis));
      groups();
      break;
    case OpCode::kReduceScatter:
      out.push_back(absl::StrCat("reduce=", ReduceName(a.reduce)));
      out.push_back(absl::StrCat("axis=", a.axis));
      groups();
      break;
    case OpCode::kCollectivePermute: {
      std::vector<std::string> ps;
      for (const auto& [s, t] : a.source_target_pairs)
        ps.push_back(absl::StrCat("{", s, ",", t, "}"));
      out.push_back(
          absl::StrCat("source_target_pairs={", absl::StrJoin(ps, ","), "}"));
      break;
    }
    default:
      break;
  }
  if (program.num_cores_per_replica() > 1)
    out.push_back(absl::StrCat("core=", op.logical_core));
  return out;
}

}  // namespace

// ---- Program ----

const VariableDecl* Program::FindVariable(int slot) const {
  for (const VariableDecl& v : variables_) {
    if (v.slot == slot) return &v;
  }
  return nullptr;
}

OpCost Program::CostOf(Value v) const {
  const Op& op = ops_[v.id];
  std::vector<const ValueType*> operands;
  operands.reserve(op.operands.size());
  for (int o : op.operands) operands.push_back(&ops_[o].type);
  return OpCostOf(op.code, op.attrs, operands, op.type,
                  InferContext{num_replicas_});
}

OpCost Program::TotalCost() const {
  OpCost total;
  for (int i = 0; i < static_cast<int>(ops_.size()); ++i)
    total += CostOf(Value{i});
  return total;
}

std::string Program::ToText() const {
  std::string out =
      absl::StrCat("program ", name_, " (replicas=", num_replicas_,
                   ", cores_per_replica=", num_cores_per_replica_, ") {\n");
  for (const VariableDecl& v : variables_) {
    absl::StrAppend(&out, "  var slot=", v.slot, " ",
                    ValueType(v.dtype, v.shape).ToString(), " \"", v.name,
                    "\"\n");
  }
  for (int i = 0; i < static_cast<int>(ops_.size()); ++i) {
    const Op& op = ops_[i];
    std::vector<std::string> operands;
    for (int o : op.operands) operands.push_back(absl::StrCat("%", o));
    absl::StrAppend(&out, "  %", i, " = ", op.type.ToString(), " ",
                    OpCodeName(op.code), "(", absl::StrJoin(operands, ", "),
                    ")");
    std::vector<std::string> attrs = AttrStrings(op, *this);
    if (!attrs.empty()) absl::StrAppend(&out, ", ", absl::StrJoin(attrs, ", "));
    out += "\n";
  }
  std::vector<std::string> outs;
  for (Value v : outputs_) outs.push_back(absl::StrCat("%", v.id));
  absl::StrAppend(&out, "  ROOT (", absl::StrJoin(outs, ", "), ")\n}\n");
  return out;
}

void Program::ToProto(proto::ProgramProto* out) const {
  out->Clear();
  out->set_name(name_);
  out->set_num_replicas(num_replicas_);
  out->set_num_cores_per_replica(num_cores_per_replica_);
  for (const VariableDecl& v : variables_) {
    proto::VariableDeclProto* p = out->add_variables();
    p->set_slot(v.slot);
    p->set_dtype(std::string(DTypeName(v.dtype)));
    for (int64_t d : v.shape.dims()) p->add_dims(d);
    p->set_name(v.name);
  }
  for (const Op& op : ops_) {
    proto::OpProto* p = out->add_ops();
    const OpAttrs& a = op.attrs;
    p->set_op(std::string(OpCodeName(op.code)));
    for (int o : op.operands) p->add_operands(o);
    TypeToProto(op.type, p->mutable_type());
    p->set_logical_core(op.logical_core);
    p->set_parameter_index(a.parameter_index);
    p->set_variable_slot(a.variable_slot);
    if (op.code == OpCode::kParameter || op.code == OpCode::kVariableRead ||
        op.code == OpCode::kVariableAssign ||
        op.code == OpCode::kVariableAssignAdd) {
      TypeToProto(a.declared_type, p->mutable_declared_type());
    }
    if (op.code == OpCode::kConstant)
      TensorToProto(a.literal, p->mutable_literal());
    p->set_dtype(std::string(DTypeName(a.dtype)));
    for (int64_t v : a.shape) p->add_shape(v);
    for (int64_t v : a.permutation) p->add_permutation(v);
    for (int64_t v : a.axes) p->add_axes(v);
    p->set_keepdims(a.keepdims);
    p->set_axis(a.axis);
    for (int64_t v : a.start) p->add_start(v);
    for (int64_t v : a.limit) p->add_limit(v);
    for (int64_t v : a.strides) p->add_strides(v);
    for (int64_t v : a.dot.lhs_batch) p->add_lhs_batch(v);
    for (int64_t v : a.dot.rhs_batch) p->add_rhs_batch(v);
    for (int64_t v : a.dot.lhs_contracting) p->add_lhs_contracting(v);
    for (int64_t v : a.dot.rhs_contracting) p->add_rhs_contracting(v);
    for (int64_t v : a.window_strides) p->add_window_strides(v);
    for (int64_t v : a.window) p->add_window(v);
    p->set_padding(std::string(PaddingName(a.padding)));
    if (a.precision != Precision::kDefault)
      p->set_precision(std::string(PrecisionName(a.precision)));
    p->set_depth(a.depth);
    p->set_on_value(a.on_value);
    p->set_off_value(a.off_value);
    p->set_reduce(std::string(ReduceName(a.reduce)));
    for (const auto& g : a.replica_groups) {
      proto::ReplicaGroupProto* gp = p->add_replica_groups();
      for (int64_t r : g) gp->add_replicas(r);
    }
    for (const auto& [s, t] : a.source_target_pairs) {
      proto::SourceTargetPairProto* sp = p->add_source_target_pairs();
      sp->set_source(s);
      sp->set_target(t);
    }
  }
  for (Value v : outputs_) out->add_outputs(v.id);
}

absl::StatusOr<Program> Program::FromProto(const proto::ProgramProto& proto) {
  if (proto.num_replicas() < 1 || proto.num_cores_per_replica() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "program ", proto.name(), ": num_replicas=", proto.num_replicas(),
        " and num_cores_per_replica=", proto.num_cores_per_replica(),
        " must be >= 1"));
  }
  if (int64_t{proto.num_replicas()} * proto.num_cores_per_replica() >
      kMaxProgramDevices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "program ", proto.name(), ": num_replicas=", proto.num_replicas(),
        " x num_cores_per_replica=", proto.num_cores_per_replica(),
        " devices exceed the limit of ", kMaxProgramDevices));
  }
  ProgramBuilder b(proto.name(), proto.num_replicas(),
                   proto.num_cores_per_replica());
  for (const proto::VariableDeclProto& v : proto.variables()) {
    TPUSIM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(v.dtype()));
    TPUSIM_RETURN_IF_ERROR(b.DeclareVariable(
        v.slot(), dtype,
        Shape(std::vector<int64_t>(v.dims().begin(), v.dims().end())),
        v.name()));
  }
  for (int i = 0; i < proto.ops_size(); ++i) {
    const proto::OpProto& p = proto.ops(i);
    auto where = [&](const absl::Status& s) {
      return absl::Status(
          s.code(), absl::StrCat("program ", proto.name(), " op %", i, ": ",
                                 s.message()));
    };
    absl::StatusOr<OpCode> code = OpCodeFromName(p.op());
    if (!code.ok()) return where(code.status());
    OpAttrs a;
    a.parameter_index = p.parameter_index();
    a.variable_slot = p.variable_slot();
    if (p.has_declared_type()) {
      absl::StatusOr<ValueType> t = TypeFromProto(p.declared_type());
      if (!t.ok()) return where(t.status());
      a.declared_type = *t;
    }
    if (p.has_literal()) {
      absl::StatusOr<Tensor> t = TensorFromProto(p.literal());
      if (!t.ok()) return where(t.status());
      a.literal = *t;
    }
    if (!p.dtype().empty()) {
      absl::StatusOr<DType> d = DTypeFromName(p.dtype());
      if (!d.ok()) return where(d.status());
      a.dtype = *d;
    }
    a.shape.assign(p.shape().begin(), p.shape().end());
    a.permutation.assign(p.permutation().begin(), p.permutation().end());
    a.axes.assign(p.axes().begin(), p.axes().end());
    a.keepdims = p.keepdims();
    a.axis = p.axis();
    a.start.assign(p.start().begin(), p.start().end());
    a.limit.assign(p.limit().begin(), p.limit().end());
    a.strides.assign(p.strides().begin(), p.strides().end());
    a.dot.lhs_batch.assign(p.lhs_batch().begin(), p.lhs_batch().end());
    a.dot.rhs_batch.assign(p.rhs_batch().begin(), p.rhs_batch().end());
    a.dot.lhs_contracting.assign(p.lhs_contracting().begin(),
                                 p.lhs_contracting().end());
    a.dot.rhs_contracting.assign(p.rhs_contracting().begin(),
                                 p.rhs_contracting().end());
    if (p.window_strides_size() > 0) {
      a.window_strides.assign(p.window_strides().begin(),
                              p.window_strides().end());
    }
    a.window.assign(p.window().begin(), p.window().end());
    if (p.padding() == "SAME") {
      a.padding = Padding::kSame;
    } else if (p.padding().empty() || p.padding() == "VALID") {
      a.padding = Padding::kValid;
    } else {
      return where(absl::InvalidArgumentError(
          absl::StrCat("padding \"", p.padding(), "\" is not VALID or SAME")));
    }
    {
      absl::StatusOr<Precision> precision = PrecisionFromName(p.precision());
      if (!precision.ok()) return where(precision.status());
      a.precision = *precision;
    }
    a.depth = p.depth();
    a.on_value = p.on_value();
    a.off_value = p.off_value();
    if (p.reduce() == "mean") {
      a.reduce = CollectiveReduce::kMean;
    } else if (p.reduce().empty() || p.reduce() == "sum") {
      a.reduce = CollectiveReduce::kSum;
    } else {
      return where(absl::InvalidArgumentError(
          absl::StrCat("reduce \"", p.reduce(), "\" is not sum or mean")));
    }
    for (const proto::ReplicaGroupProto& g : p.replica_groups()) {
      a.replica_groups.emplace_back(g.replicas().begin(), g.replicas().end());
    }
    for (const proto::SourceTargetPairProto& st : p.source_target_pairs()) {
      a.source_target_pairs.emplace_back(st.source(), st.target());
    }
    if (*code == OpCode::kVariableRead || *code == OpCode::kVariableAssign ||
        *code == OpCode::kVariableAssignAdd) {
      // Slots are ints: a wider value must not alias a declared slot.
      const VariableDecl* decl =
          a.variable_slot == static_cast<int>(a.variable_slot)
              ? b.program_.FindVariable(static_cast<int>(a.variable_slot))
              : nullptr;
      if (decl == nullptr) {
        return where(absl::InvalidArgumentError(absl::StrCat(
            "variable slot ", a.variable_slot, " is not declared")));
      }
      a.declared_type = ValueType(decl->dtype, decl->shape);
    }
    if (*code == OpCode::kParameter &&
        a.parameter_index != b.program_.parameters_.size()) {
      return where(absl::InvalidArgumentError(absl::StrCat(
          "parameter index ", a.parameter_index, " out of order; expected ",
          b.program_.parameters_.size())));
    }
    absl::Status core = b.set_logical_core(p.logical_core());
    if (!core.ok()) return where(core);
    std::vector<Value> operands;
    for (int o : p.operands()) {
      if (o < 0 || o >= i) {
        return where(absl::InvalidArgumentError(
            absl::StrCat("operand %", o, " does not refer to an earlier op")));
      }
      operands.push_back(Value{o});
    }
    absl::StatusOr<Value> v = b.AddOp(*code, operands, std::move(a));
    if (!v.ok()) return where(v.status());
    if (p.has_type()) {
      absl::StatusOr<ValueType> recorded = TypeFromProto(p.type());
      if (!recorded.ok()) return where(recorded.status());
      if (*recorded != b.type(*v)) {
        return where(absl::InvalidArgumentError(absl::StrCat(
            "recorded type ", recorded->ToString(),
            " disagrees with the shape rule's ", b.type(*v).ToString())));
      }
    }
  }
  std::vector<Value> outputs;
  for (int o : proto.outputs()) outputs.push_back(Value{o});
  return std::move(b).Build(outputs);
}

// ---- ProgramBuilder ----

ProgramBuilder::ProgramBuilder(std::string name, int num_replicas,
                               int num_cores_per_replica) {
  TPUSIM_CHECK(num_replicas >= 1) << num_replicas;
  TPUSIM_CHECK(num_cores_per_replica >= 1) << num_cores_per_replica;
  program_.name_ = std::move(name);
  program_.num_replicas_ = num_replicas;
  program_.num_cores_per_replica_ = num_cores_per_replica;
}

absl::Status ProgramBuilder::set_logical_core(int core) {
  if (core < 0 || core >= program_.num_cores_per_replica_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "logical_core=", core, " is outside [0, ",
        program_.num_cores_per_replica_, ") (num_cores_per_replica)"));
  }
  logical_core_ = core;
  return absl::OkStatus();
}

absl::StatusOr<Value> ProgramBuilder::AddOp(OpCode code,
                                            absl::Span<const Value> operands,
                                            OpAttrs attrs) {
  const int n = static_cast<int>(program_.ops_.size());
  std::vector<const ValueType*> types;
  types.reserve(operands.size());
  for (Value v : operands) {
    if (v.id < 0 || v.id >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          OpCodeName(code), ": operand %", v.id, " is not a value of program ",
          program_.name_, " (it has ", n, " values)"));
    }
    types.push_back(&program_.ops_[v.id].type);
  }
  TPUSIM_ASSIGN_OR_RETURN(
      ValueType type,
      InferOpType(code, attrs, types, InferContext{program_.num_replicas_}));
  Op op;
  op.code = code;
  op.operands.reserve(operands.size());
  for (Value v : operands) op.operands.push_back(v.id);
  op.attrs = std::move(attrs);
  op.type = std::move(type);
  op.logical_core = logical_core_;
  if (op.type.any_dynamic()) program_.has_dynamic_shapes_ = true;
  if (code == OpCode::kParameter) program_.parameters_.push_back(Value{n});
  program_.ops_.push_back(std::move(op));
  return Value{n};
}

absl::StatusOr<Value> ProgramBuilder::Parameter(DType dtype, Shape shape,
                                                uint64_t dynamic_dims) {
  OpAttrs a;
  a.parameter_index = static_cast<int64_t>(program_.parameters_.size());
  a.declared_type = ValueType(dtype, std::move(shape), dynamic_dims);
  return AddOp(OpCode::kParameter, {}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Constant(Tensor literal) {
  OpAttrs a;
  a.literal = std::move(literal);
  return AddOp(OpCode::kConstant, {}, std::move(a));
}

Value ProgramBuilder::ReplicaId() {
  absl::StatusOr<Value> v = AddOp(OpCode::kReplicaId, {}, OpAttrs{});
  TPUSIM_CHECK(v.ok()) << v.status().ToString();
  return *v;
}

absl::Status ProgramBuilder::DeclareVariable(int slot, DType dtype, Shape shape,
                                             std::string name) {
  if (slot < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable slot ", slot, " must be >= 0"));
  }
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(absl::StrCat("variable slot ", slot,
                                                   ": shape ", shape.ToString(),
                                                   " must be fully defined"));
  }
  if (absl::StatusOr<int64_t> bytes = CheckedByteSize(dtype, shape);
      !bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable slot ", slot, ": ", bytes.status().message()));
  }
  if (const VariableDecl* d = program_.FindVariable(slot)) {
    if (d->dtype == dtype && d->shape == shape) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("variable slot ", slot, " is already declared as ",
                     ValueType(d->dtype, d->shape).ToString(), ", not ",
                     ValueType(dtype, shape).ToString()));
  }
  VariableDecl decl{slot, dtype, std::move(shape), std::move(name)};
  auto it = std::lower_bound(
      program_.variables_.begin(), program_.variables_.end(), slot,
      [](const VariableDecl& v, int s) { return v.slot < s; });
  program_.variables_.insert(it, std::move(decl));
  return absl::OkStatus();
}

namespace {
absl::Status Undeclared(OpCode code, int slot) {
  return absl::InvalidArgumentError(
      absl::StrCat(OpCodeName(code), ": variable slot ", slot,
                   " is not declared (DeclareVariable first)"));
}
}  // namespace

absl::StatusOr<Value> ProgramBuilder::VariableRead(int slot) {
  const VariableDecl* d = program_.FindVariable(slot);
  if (d == nullptr) return Undeclared(OpCode::kVariableRead, slot);
  OpAttrs a;
  a.variable_slot = slot;
  a.declared_type = ValueType(d->dtype, d->shape);
  return AddOp(OpCode::kVariableRead, {}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::VariableAssign(int slot, Value value) {
  const VariableDecl* d = program_.FindVariable(slot);
  if (d == nullptr) return Undeclared(OpCode::kVariableAssign, slot);
  OpAttrs a;
  a.variable_slot = slot;
  a.declared_type = ValueType(d->dtype, d->shape);
  return AddOp(OpCode::kVariableAssign, {value}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::VariableAssignAdd(int slot, Value delta) {
  const VariableDecl* d = program_.FindVariable(slot);
  if (d == nullptr) return Undeclared(OpCode::kVariableAssignAdd, slot);
  OpAttrs a;
  a.variable_slot = slot;
  a.declared_type = ValueType(d->dtype, d->shape);
  return AddOp(OpCode::kVariableAssignAdd, {delta}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Unary(OpCode code, Value x) {
  if (!IsElementwiseUnary(code) || code == OpCode::kCast) {
    return absl::InvalidArgumentError(
        absl::StrCat(OpCodeName(code),
                     " is not an elementwise unary op (neg, exp, log, tanh, "
                     "relu, sigmoid, rsqrt, sqrt)"));
  }
  return AddOp(code, {x}, OpAttrs{});
}

absl::StatusOr<Value> ProgramBuilder::Binary(OpCode code, Value x, Value y) {
  if (!IsElementwiseBinary(code)) {
    return absl::InvalidArgumentError(absl::StrCat(
        OpCodeName(code),
        " is not an elementwise binary op (add, sub, mul, div, max, min)"));
  }
  return AddOp(code, {x, y}, OpAttrs{});
}

absl::StatusOr<Value> ProgramBuilder::Cast(Value x, DType dtype) {
  OpAttrs a;
  a.dtype = dtype;
  return AddOp(OpCode::kCast, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::DotGeneral(Value lhs, Value rhs,
                                                 DotDims dims,
                                                 Precision precision) {
  OpAttrs a;
  a.dot = std::move(dims);
  a.precision = precision;
  return AddOp(OpCode::kDot, {lhs, rhs}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::MatMul(Value a, Value b, bool transpose_a,
                                             bool transpose_b,
                                             Precision precision) {
  const int n = num_ops();
  for (Value v : {a, b}) {
    if (v.id < 0 || v.id >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("matmul: operand %", v.id, " is not a value of program ",
                       program_.name_));
    }
  }
  const ValueType& ta = type(a);
  const ValueType& tb = type(b);
  if (ta.rank() < 2 || ta.rank() != tb.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul(", ta.ToString(), ", ", tb.ToString(),
        "): operands must have equal rank >= 2 ([..., M, K] x [..., K, N])"));
  }
  const int r = ta.rank();
  DotDims d;
  for (int i = 0; i < r - 2; ++i) {
    d.lhs_batch.push_back(i);
    d.rhs_batch.push_back(i);
  }
  d.lhs_contracting.push_back(transpose_a ? r - 2 : r - 1);
  d.rhs_contracting.push_back(transpose_b ? r - 1 : r - 2);
  return DotGeneral(a, b, std::move(d), precision);
}

absl::StatusOr<Value> ProgramBuilder::Conv2D(Value input, Value filter,
                                             std::vector<int64_t> strides,
                                             Padding padding,
                                             Precision precision) {
  OpAttrs a;
  a.window_strides = std::move(strides);
  a.padding = padding;
  a.precision = precision;
  return AddOp(OpCode::kConv2D, {input, filter}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::MaxPool2D(Value input,
                                                std::vector<int64_t> window,
                                                std::vector<int64_t> strides,
                                                Padding padding) {
  OpAttrs a;
  a.window = std::move(window);
  a.window_strides = std::move(strides);
  a.padding = padding;
  return AddOp(OpCode::kMaxPool2D, {input}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::ReduceSum(Value x,
                                                std::vector<int64_t> axes,
                                                bool keepdims) {
  OpAttrs a;
  a.axes = std::move(axes);
  a.keepdims = keepdims;
  return AddOp(OpCode::kReduceSum, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::ReduceMean(Value x,
                                                 std::vector<int64_t> axes,
                                                 bool keepdims) {
  OpAttrs a;
  a.axes = std::move(axes);
  a.keepdims = keepdims;
  return AddOp(OpCode::kReduceMean, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::ReduceMax(Value x,
                                                std::vector<int64_t> axes,
                                                bool keepdims) {
  OpAttrs a;
  a.axes = std::move(axes);
  a.keepdims = keepdims;
  return AddOp(OpCode::kReduceMax, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Softmax(Value x) {
  return AddOp(OpCode::kSoftmax, {x}, OpAttrs{});
}

absl::StatusOr<Value> ProgramBuilder::Reshape(Value x,
                                              std::vector<int64_t> shape) {
  OpAttrs a;
  a.shape = std::move(shape);
  return AddOp(OpCode::kReshape, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Transpose(
    Value x, std::vector<int64_t> permutation) {
  OpAttrs a;
  a.permutation = std::move(permutation);
  return AddOp(OpCode::kTranspose, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Broadcast(Value x,
                                                std::vector<int64_t> shape) {
  OpAttrs a;
  a.shape = std::move(shape);
  return AddOp(OpCode::kBroadcast, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Slice(Value x, std::vector<int64_t> start,
                                            std::vector<int64_t> limit,
                                            std::vector<int64_t> strides) {
  OpAttrs a;
  a.start = std::move(start);
  a.limit = std::move(limit);
  a.strides = std::move(strides);
  return AddOp(OpCode::kSlice, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Concat(absl::Span<const Value> values,
                                             int64_t axis) {
  OpAttrs a;
  a.axis = axis;
  return AddOp(OpCode::kConcat, values, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::Gather(Value params, Value indices,
                                             int64_t axis) {
  OpAttrs a;
  a.axis = axis;
  return AddOp(OpCode::kGather, {params, indices}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::OneHot(Value indices, int64_t depth,
                                             DType dtype, double on_value,
                                             double off_value) {
  OpAttrs a;
  a.depth = depth;
  a.dtype = dtype;
  a.on_value = on_value;
  a.off_value = off_value;
  return AddOp(OpCode::kOneHot, {indices}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::AllReduce(
    Value x, CollectiveReduce reduce,
    std::vector<std::vector<int64_t>> groups) {
  OpAttrs a;
  a.reduce = reduce;
  a.replica_groups = std::move(groups);
  return AddOp(OpCode::kAllReduce, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::AllGather(
    Value x, int64_t axis, std::vector<std::vector<int64_t>> groups) {
  OpAttrs a;
  a.axis = axis;
  a.replica_groups = std::move(groups);
  return AddOp(OpCode::kAllGather, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::ReduceScatter(
    Value x, CollectiveReduce reduce, int64_t axis,
    std::vector<std::vector<int64_t>> groups) {
  OpAttrs a;
  a.reduce = reduce;
  a.axis = axis;
  a.replica_groups = std::move(groups);
  return AddOp(OpCode::kReduceScatter, {x}, std::move(a));
}

absl::StatusOr<Value> ProgramBuilder::CollectivePermute(
    Value x, std::vector<std::pair<int64_t, int64_t>> pairs) {
  OpAttrs a;
  a.source_target_pairs = std::move(pairs);
  return AddOp(OpCode::kCollectivePermute, {x}, std::move(a));
}

absl::StatusOr<Program> ProgramBuilder::Build(
    absl::Span<const Value> outputs) && {
  const int n = num_ops();
  for (Value v : outputs) {
    if (v.id < 0 || v.id >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("program ", program_.name_, ": output %", v.id,
                       " is not a value (it has ", n, " values)"));
    }
  }
  program_.outputs_.assign(outputs.begin(), outputs.end());
  return std::move(program_);
}

}  // namespace tpusim::runtime
