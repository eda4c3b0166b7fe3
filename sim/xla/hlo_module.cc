#include "sim/xla/hlo_module.h"

#include <algorithm>

#include <functional>
#include <numeric>
#include <utility>

#include "common/status_macros.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpusim::sim::xla {
namespace {

// Protobuf wire format: a cursor over one message's bytes.
class Wire {
 public:
  Wire(absl::string_view bytes, const char* message)
      : bytes_(bytes), message_(message) {}

  bool done() const { return pos_ >= bytes_.size(); }

  // Reads the next tag; false with an error at a malformed one.
  absl::Status Next(int* field, int* wire) {
    uint64_t tag = 0;
    if (!Varint(&tag) || (tag >> 3) == 0) return Bad("a field tag");
    *field = static_cast<int>(tag >> 3);
    *wire = static_cast<int>(tag & 7);
    return absl::OkStatus();
  }
  absl::Status Int(int wire, int field, int64_t* out) {
    uint64_t v = 0;
    if (wire != 0 || !Varint(&v)) return Bad(absl::StrCat("field ", field));
    *out = static_cast<int64_t>(v);
    return absl::OkStatus();
  }
  absl::Status Bytes(int wire, int field, absl::string_view* out) {
    uint64_t n = 0;
    if (wire != 2 || !Varint(&n) || n > bytes_.size() - pos_) {
      return Bad(absl::StrCat("field ", field));
    }
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  // A repeated int64, packed (wire type 2) or not (0).
  absl::Status Ints(int wire, int field, std::vector<int64_t>* out) {
    if (wire == 0) {
      int64_t v = 0;
      if (absl::Status s = Int(wire, field, &v); !s.ok()) return s;
      out->push_back(v);
      return absl::OkStatus();
    }
    absl::string_view packed;
    if (absl::Status s = Bytes(wire, field, &packed); !s.ok()) return s;
    Wire inner(packed, message_);
    while (!inner.done()) {
      uint64_t v = 0;
      if (!inner.Varint(&v)) return Bad(absl::StrCat("packed field ", field));
      out->push_back(static_cast<int64_t>(v));
    }
    return absl::OkStatus();
  }
  absl::Status Skip(int wire, int field) {
    uint64_t v = 0;
    switch (wire) {
      case 0:
        if (Varint(&v)) return absl::OkStatus();
        break;
      case 1:
        if (bytes_.size() - pos_ >= 8) {
          pos_ += 8;
          return absl::OkStatus();
        }
        break;
      case 2: {
        absl::string_view unused;
        return Bytes(wire, field, &unused);
      }
      case 5:
        if (bytes_.size() - pos_ >= 4) {
          pos_ += 4;
          return absl::OkStatus();
        }
        break;
      default:
        break;
    }
    return Bad(absl::StrCat("field ", field, " (wire type ", wire, ")"));
  }

 private:
  bool Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  absl::Status Bad(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "HLO module: malformed ", message_, " at byte ", pos_, ": ", what));
  }

  absl::string_view bytes_;
  const char* message_;
  size_t pos_ = 0;
};

// Calls `on(field, wire, &w)` for every field; `on` consumes the value
// (returning Skip for the fields it does not read).
absl::Status ForEachField(
    absl::string_view bytes, const char* message,
    const std::function<absl::Status(int, int, Wire&)>& on) {
  Wire w(bytes, message);
  while (!w.done()) {
    int field = 0, wire = 0;
    TPUSIM_RETURN_IF_ERROR(w.Next(&field, &wire));
    TPUSIM_RETURN_IF_ERROR(on(field, wire, w));
  }
  return absl::OkStatus();
}

absl::Status ParseTile(absl::string_view bytes, std::vector<int64_t>* tile) {
  return ForEachField(bytes, "TileProto", [&](int f, int wire, Wire& w) {
    if (f == 1) return w.Ints(wire, f, tile);
    return w.Skip(wire, f);
  });
}

absl::Status ParseLayout(absl::string_view bytes, HloShape* shape) {
  return ForEachField(bytes, "LayoutProto", [&](int f, int wire, Wire& w) {
    switch (f) {
      case 1:
        return w.Ints(wire, f, &shape->minor_to_major);
      case 6: {
        absl::string_view t;
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &t));
        shape->tiles.emplace_back();
        return ParseTile(t, &shape->tiles.back());
      }
      case 7:
        return w.Int(wire, f, &shape->element_size_in_bits);
      case 8:
        return w.Int(wire, f, &shape->memory_space);
      default:
        return w.Skip(wire, f);
    }
  });
}

absl::Status ParseShape(absl::string_view bytes, HloShape* shape) {
  return ForEachField(bytes, "ShapeProto", [&](int f, int wire, Wire& w) {
    switch (f) {
      case 2: {
        int64_t t = 0;
        TPUSIM_RETURN_IF_ERROR(w.Int(wire, f, &t));
        shape->element_type = static_cast<int>(t);
        return absl::OkStatus();
      }
      case 3:
        return w.Ints(wire, f, &shape->dimensions);
      case 4: {
        absl::string_view t;
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &t));
        shape->tuple_shapes.emplace_back();
        return ParseShape(t, &shape->tuple_shapes.back());
      }
      case 5: {
        absl::string_view t;
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &t));
        return ParseLayout(t, shape);
      }
      default:
        return w.Skip(wire, f);
    }
  });
}

absl::Status ParseReplicaGroup(absl::string_view bytes,
                               std::vector<int64_t>* ids) {
  return ForEachField(bytes, "ReplicaGroup", [&](int f, int wire, Wire& w) {
    if (f == 1) return w.Ints(wire, f, ids);
    return w.Skip(wire, f);
  });
}

// IotaReplicaGroupListProto: iota(N*G) reshaped to iota_reshape_dims,
// transposed by iota_transpose_perm, read as num_replica_groups rows of
// num_devices_per_group.
absl::Status ParseIotaGroups(absl::string_view bytes,
                             std::vector<std::vector<int64_t>>* groups) {
  int64_t num_groups = 0, per_group = 0;
  std::vector<int64_t> dims, perm;
  TPUSIM_RETURN_IF_ERROR(ForEachField(
      bytes, "IotaReplicaGroupListProto", [&](int f, int wire, Wire& w) {
        switch (f) {
          case 1:
            return w.Int(wire, f, &num_groups);
          case 2:
            return w.Int(wire, f, &per_group);
          case 3:
            return w.Ints(wire, f, &dims);
          case 4:
            return w.Ints(wire, f, &perm);
          default:
            return w.Skip(wire, f);
        }
      }));
  const int64_t total = num_groups * per_group;
  if (num_groups < 1 || per_group < 1 || total > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HLO module: iota replica group list of ", num_groups, " groups of ",
        per_group, ": each must be >= 1 and the product at most 2^24"));
  }
  if (dims.empty()) dims = {total};
  if (perm.empty()) {
    perm.resize(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  int64_t product = 1;
  for (int64_t d : dims) product *= d;
  if (product != total || perm.size() != dims.size()) {
    return absl::InvalidArgumentError(
        "HLO module: iota replica group list whose reshape dims do not "
        "multiply to its device count");
  }
  // Element k of the transposed array: its index in the transposed shape,
  // mapped back through perm to the original (row-major) iota value.
  const size_t rank = dims.size();
  std::vector<int64_t> tdims(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank)) {
      return absl::InvalidArgumentError(
          "HLO module: iota replica group list with a bad transpose");
    }
    tdims[i] = dims[perm[i]];
  }
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) stride[i - 1] = stride[i] * dims[i];
  groups->assign(num_groups, {});
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t value = 0;
    for (size_t i = 0; i < rank; ++i) value += idx[i] * stride[perm[i]];
    (*groups)[k / per_group].push_back(value);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < tdims[i]) break;
      idx[i] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseInstruction(absl::string_view bytes, HloInstruction* inst) {
  return ForEachField(bytes, "HloInstructionProto", [&](int f, int wire,
                                                        Wire& w) {
    absl::string_view s;
    switch (f) {
      case 1:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        inst->name = std::string(s);
        return absl::OkStatus();
      case 2:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        inst->opcode = std::string(s);
        return absl::OkStatus();
      case 3:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ParseShape(s, &inst->shape);
      case 9:
        return w.Int(wire, f, &inst->parameter_number);
      case 11:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        inst->fusion_kind = std::string(s);
        return absl::OkStatus();
      case 13:
        return w.Int(wire, f, &inst->tuple_index);
      case 14:
        return w.Ints(wire, f, &inst->dimensions);
      case 15:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ForEachField(s, "Window", [&](int f2, int w2, Wire& ww) {
          if (f2 != 1) return ww.Skip(w2, f2);
          absl::string_view d;
          TPUSIM_RETURN_IF_ERROR(ww.Bytes(w2, f2, &d));
          HloInstruction::WindowDim dim;
          TPUSIM_RETURN_IF_ERROR(ForEachField(d, "WindowDimension",
                                   [&](int f3, int w3, Wire& wd) {
                                     switch (f3) {
                                       case 1:
                                         return wd.Int(w3, f3, &dim.size);
                                       case 2:
                                         return wd.Int(w3, f3, &dim.stride);
                                       case 3:
                                         return wd.Int(w3, f3, &dim.padding_low);
                                       case 5:
                                         return wd.Int(w3, f3,
                                                       &dim.window_dilation);
                                       case 6:
                                         return wd.Int(w3, f3,
                                                       &dim.base_dilation);
                                       default:
                                         return wd.Skip(w3, f3);
                                     }
                                   }));
          // proto3: an absent stride or dilation reads 0 and means 1.
          dim.stride = std::max<int64_t>(1, dim.stride);
          dim.window_dilation = std::max<int64_t>(1, dim.window_dilation);
          dim.base_dilation = std::max<int64_t>(1, dim.base_dilation);
          inst->window_sizes.push_back(dim.size);
          inst->window.push_back(dim);
          return absl::OkStatus();
        });
      case 16:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ForEachField(
            s, "ConvolutionDimensionNumbers", [&](int f2, int w2, Wire& ww) {
              switch (f2) {
                case 3:
                  return ww.Int(w2, f2, &inst->kernel_input_feature_dimension);
                case 4:
                  return ww.Int(w2, f2, &inst->kernel_output_feature_dimension);
                case 6:
                  return ww.Ints(w2, f2, &inst->kernel_spatial_dimensions);
                case 11:
                  return ww.Ints(w2, f2, &inst->input_spatial_dimensions);
                case 12:
                  return ww.Ints(w2, f2, &inst->output_spatial_dimensions);
                default:
                  return ww.Skip(w2, f2);
              }
            });
      case 26:
        return w.Int(wire, f, &inst->channel_id);
      case 28:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        inst->custom_call_target = std::string(s);
        return absl::OkStatus();
      case 30:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ForEachField(s, "DotDimensionNumbers",
                            [&](int f2, int w2, Wire& ww) {
                              switch (f2) {
                                case 1:
                                  return ww.Ints(w2, f2, &inst->lhs_contracting);
                                case 2:
                                  return ww.Ints(w2, f2, &inst->rhs_contracting);
                                case 3:
                                  return ww.Ints(w2, f2, &inst->lhs_batch);
                                case 4:
                                  return ww.Ints(w2, f2, &inst->rhs_batch);
                                default:
                                  return ww.Skip(w2, f2);
                              }
                            });
      case 35:
        return w.Int(wire, f, &inst->id);
      case 36:
        return w.Ints(wire, f, &inst->operand_ids);
      case 38:
        return w.Ints(wire, f, &inst->called_computation_ids);
      case 40:  // sharding (OpSharding): only its presence is read
        inst->has_sharding = true;
        return w.Skip(wire, f);
      case 49:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        inst->replica_groups.emplace_back();
        return ParseReplicaGroup(s, &inst->replica_groups.back());
      case 50:
        return w.Int(wire, f, &inst->feature_group_count);
      case 52: {
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        int64_t source = 0, target = 0;
        TPUSIM_RETURN_IF_ERROR(ForEachField(s, "SourceTarget",
                                 [&](int f2, int w2, Wire& ww) {
                                   if (f2 == 1) return ww.Int(w2, f2, &source);
                                   if (f2 == 2) return ww.Int(w2, f2, &target);
                                   return ww.Skip(w2, f2);
                                 }));
        inst->source_target_pairs.emplace_back(source, target);
        return absl::OkStatus();
      }
      case 58:
        return w.Int(wire, f, &inst->batch_group_count);
      case 87:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ForEachField(
            s, "CollectiveDeviceListProto", [&](int f2, int w2, Wire& ww) {
              absl::string_view g;
              if (f2 == 1) {
                TPUSIM_RETURN_IF_ERROR(ww.Bytes(w2, f2, &g));
                inst->replica_groups.emplace_back();
                return ParseReplicaGroup(g, &inst->replica_groups.back());
              }
              if (f2 == 2) {
                TPUSIM_RETURN_IF_ERROR(ww.Bytes(w2, f2, &g));
                return ParseIotaGroups(g, &inst->replica_groups);
              }
              return ww.Skip(w2, f2);
            });
      default:
        return w.Skip(wire, f);
    }
  });
}

absl::Status ParseComputation(absl::string_view bytes, HloComputation* c) {
  TPUSIM_RETURN_IF_ERROR(ForEachField(
      bytes, "HloComputationProto", [&](int f, int wire, Wire& w) {
        absl::string_view s;
        switch (f) {
          case 1:
            TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
            c->name = std::string(s);
            return absl::OkStatus();
          case 2:
            TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
            c->instructions.emplace_back();
            return ParseInstruction(s, &c->instructions.back());
          case 5:
            return w.Int(wire, f, &c->id);
          case 6:
            return w.Int(wire, f, &c->root_id);
          default:
            return w.Skip(wire, f);
        }
      }));
  for (size_t i = 0; i < c->instructions.size(); ++i) {
    c->index[c->instructions[i].id] = static_cast<int>(i);
  }
  return absl::OkStatus();
}

absl::Status ParseSchedule(absl::string_view bytes,
                           std::map<int64_t, std::vector<int64_t>>* out) {
  return ForEachField(bytes, "HloScheduleProto", [&](int f, int wire,
                                                     Wire& w) {
    if (f != 1) return w.Skip(wire, f);
    absl::string_view entry;
    TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &entry));
    int64_t key = 0;
    std::vector<int64_t> ids;
    TPUSIM_RETURN_IF_ERROR(ForEachField(entry, "HloScheduleProto.SequencesEntry",
                             [&](int f2, int w2, Wire& ww) {
                               if (f2 == 1) return ww.Int(w2, f2, &key);
                               if (f2 != 2) return ww.Skip(w2, f2);
                               absl::string_view seq;
                               TPUSIM_RETURN_IF_ERROR(ww.Bytes(w2, f2, &seq));
                               return ForEachField(
                                   seq, "InstructionSequence",
                                   [&](int f3, int w3, Wire& ws) {
                                     if (f3 == 1) return ws.Ints(w3, f3, &ids);
                                     return ws.Skip(w3, f3);
                                   });
                             }));
    (*out)[key] = std::move(ids);
    return absl::OkStatus();
  });
}

absl::Status ParseModuleProto(absl::string_view bytes, HloModule* m) {
  return ForEachField(bytes, "HloModuleProto", [&](int f, int wire, Wire& w) {
    absl::string_view s;
    switch (f) {
      case 1:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        m->name = std::string(s);
        return absl::OkStatus();
      case 2:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        m->entry_computation_name = std::string(s);
        return absl::OkStatus();
      case 3:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        m->computations.emplace_back();
        return ParseComputation(s, &m->computations.back());
      case 6:
        return w.Int(wire, f, &m->entry_computation_id);
      case 7:
        TPUSIM_RETURN_IF_ERROR(w.Bytes(wire, f, &s));
        return ParseSchedule(s, &m->schedule);
      default:
        return w.Skip(wire, f);
    }
  });
}

}  // namespace

int ElementBits(int type) {
  switch (type) {
    case kPred:
    case kS8:
    case kU8:
      return 8;
    case kS16:
    case kU16:
    case kF16:
    case kBF16:
      return 16;
    case kS32:
    case kU32:
    case kF32:
      return 32;
    case kS64:
    case kU64:
    case kF64:
    case kC64:
      return 64;
    case kC128:
      return 128;
    case 19: case 20: case 23: case 24: case 25: case 28: case 29: case 33:
      return 8;  // the f8 types
    case 21: case 22: case 32:
      return 4;  // s4, u4, f4e2m1fn
    default:
      return 0;
  }
}

std::string ElementTypeName(int type) {
  switch (type) {
    case kPred: return "pred";
    case kS8: return "s8";
    case kS16: return "s16";
    case kS32: return "s32";
    case kS64: return "s64";
    case kU8: return "u8";
    case kU16: return "u16";
    case kU32: return "u32";
    case kU64: return "u64";
    case kF16: return "f16";
    case kF32: return "f32";
    case kF64: return "f64";
    case kBF16: return "bf16";
    case kC64: return "c64";
    case kC128: return "c128";
    case kToken: return "token";
    case kOpaque: return "opaque";
    case kTuple: return "tuple";
    default: return absl::StrCat("type", type);
  }
}

int64_t HloShape::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : dimensions) n *= d;
  return n;
}

std::string HloShape::ToString() const {
  if (is_tuple()) {
    std::vector<std::string> parts;
    for (const HloShape& s : tuple_shapes) parts.push_back(s.ToString());
    return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
  }
  return absl::StrCat(ElementTypeName(element_type), "[",
                      absl::StrJoin(dimensions, ","), "]");
}

const HloInstruction* HloComputation::Find(int64_t id) const {
  auto it = index.find(id);
  return it == index.end() ? nullptr : &instructions[it->second];
}

const HloComputation* HloModule::FindComputation(int64_t id) const {
  for (const HloComputation& c : computations) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

const HloComputation* HloModule::Entry() const {
  if (const HloComputation* c = FindComputation(entry_computation_id)) return c;
  for (const HloComputation& c : computations) {
    if (c.name == entry_computation_name) return &c;
  }
  return nullptr;
}

bool HloModule::has_entry_schedule() const {
  const HloComputation* entry = Entry();
  return entry != nullptr && schedule.count(entry->id) > 0;
}

std::vector<int64_t> HloModule::EntrySequence() const {
  const HloComputation* entry = Entry();
  if (entry == nullptr) return {};
  if (auto it = schedule.find(entry->id); it != schedule.end()) {
    return it->second;
  }
  std::vector<int64_t> ids;
  for (const HloInstruction& i : entry->instructions) ids.push_back(i.id);
  return ids;
}

absl::StatusOr<HloModule> ParseHloModule(absl::string_view bytes,
                                         absl::string_view format) {
  HloModule m;
  if (format == "hlo_with_config") {
    absl::string_view module;
    bool found = false;
    TPUSIM_RETURN_IF_ERROR(ForEachField(
        bytes, "HloModuleProtoWithConfig", [&](int f, int wire, Wire& w) {
          if (f != 1) return w.Skip(wire, f);
          found = true;
          return w.Bytes(wire, f, &module);
        }));
    if (!found) {
      return absl::InvalidArgumentError(
          "HLO module: the HloModuleProtoWithConfig has no hlo_module");
    }
    TPUSIM_RETURN_IF_ERROR(ParseModuleProto(module, &m));
  } else if (format == "hlo") {
    TPUSIM_RETURN_IF_ERROR(ParseModuleProto(bytes, &m));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "HLO module format \"", format,
        "\": tpusim reads \"hlo\" (HloModuleProto) and \"hlo_with_config\" "
        "(HloModuleProtoWithConfig)"));
  }
  if (m.computations.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HLO module \"", m.name, "\" has no computations"));
  }
  const HloComputation* entry = m.Entry();
  if (entry == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HLO module \"", m.name, "\": its entry computation (id ",
        m.entry_computation_id, ", \"", m.entry_computation_name,
        "\") is not in the module"));
  }
  for (const HloComputation& c : m.computations) {
    for (const HloInstruction& i : c.instructions) {
      for (int64_t op : i.operand_ids) {
        if (c.Find(op) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HLO module \"", m.name, "\": instruction ", i.name, " in ",
              c.name, " has operand id ", op, ", which is not in ", c.name));
        }
      }
      for (int64_t called : i.called_computation_ids) {
        if (m.FindComputation(called) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HLO module \"", m.name, "\": instruction ", i.name,
              " calls computation id ", called, ", which is not in the module"));
        }
      }
    }
  }
  for (int64_t id : m.EntrySequence()) {
    if (entry->Find(id) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "HLO module \"", m.name, "\": the schedule of ", entry->name,
          " names instruction id ", id, ", which is not in it"));
    }
  }
  return m;
}

}  // namespace tpusim::sim::xla
