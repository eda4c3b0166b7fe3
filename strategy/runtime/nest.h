// strategy/runtime/nest.h
//
// Nest<Leaf>: a nested structure of leaves, like tf.nest structures: a leaf, a
// tuple of nests, a dict of nests keyed by string, or None. Dataset elements
// are Nest<Tensor>; step-function arguments and results are nests too.
//
//   Nest<Tensor> element = Nest<Tensor>::Dict({{"x", Nest<Tensor>(x)}, {"y",
//   Nest<Tensor>(y)}}); for (const auto& [path, leaf] :
//   element.FlattenWithPaths()) ...   // "x", "y"
//
// Flattening order is tf.nest's: tuple children in order, dict children by
// sorted key, None contributes no leaf. Paths join the tuple index or dict key
// of each level with '/'; a bare leaf at the top has path "0" (the first and
// only component), so that a single-tensor element and a 1-tuple read the same
// in reports.

#ifndef TPUSIM_STRATEGY_RUNTIME_NEST_H_
#define TPUSIM_STRATEGY_RUNTIME_NEST_H_

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"

namespace tpusim::runtime {

template <typename Leaf>
class Nest {
 public:
  enum class Kind { kNone, kLeaf, kTuple, kDict };

  Nest() = default;  // None
  Nest(Leaf leaf)
      : kind_(Kind::kLeaf),
        leaf_(std::move(leaf)) {}  // NOLINT: implicit by design
  Nest(const Nest& other) : kind_(other.kind_), leaf_(other.leaf_) {
    if (other.branches_ != nullptr)
      branches_ = std::make_unique<Branches>(*other.branches_);
  }
  Nest(Nest&&) noexcept = default;
  Nest& operator=(const Nest& other) {
    if (this != &other) *this = Nest(other);
    return *this;
  }
  Nest& operator=(Nest&&) noexcept = default;
  ~Nest() = default;
  static Nest None() { return Nest(); }
  static Nest Tuple(std::vector<Nest> children) {
    Nest n;
    n.kind_ = Kind::kTuple;
    n.branches_ = std::make_unique<Branches>();
    n.branches_->children = std::move(children);
    return n;
  }
  // Keys are sorted (tf.nest order); duplicate keys are a programming error.
  static Nest Dict(std::vector<std::pair<std::string, Nest>> items) {
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    Nest n;
    n.kind_ = Kind::kDict;
    n.branches_ = std::make_unique<Branches>();
    for (size_t i = 0; i < items.size(); ++i) {
      TPUSIM_CHECK(i == 0 || items[i].first != items[i - 1].first)
          << "duplicate dict key " << items[i].first;
      n.branches_->keys.push_back(std::move(items[i].first));
      n.branches_->children.push_back(std::move(items[i].second));
    }
    return n;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_leaf() const { return kind_ == Kind::kLeaf; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  // Precondition: is_leaf().
  const Leaf& leaf() const {
    TPUSIM_CHECK(is_leaf());
    return leaf_;
  }
  Leaf& mutable_leaf() {
    TPUSIM_CHECK(is_leaf());
    return leaf_;
  }
  // Children of a tuple or dict (dict children in key order).
  const std::vector<Nest>& children() const {
    return branches_ != nullptr ? branches_->children : Empty().children;
  }
  std::vector<Nest>& mutable_children() {
    if (branches_ == nullptr) branches_ = std::make_unique<Branches>();
    return branches_->children;
  }
  // Keys of a dict, sorted.
  const std::vector<std::string>& keys() const {
    return branches_ != nullptr ? branches_->keys : Empty().keys;
  }

  // The leaves in flattening order.
  std::vector<const Leaf*> Flatten() const {
    std::vector<const Leaf*> out;
    ForEach([&](const std::string&, const Leaf& l) { out.push_back(&l); });
    return out;
  }
  std::vector<std::pair<std::string, const Leaf*>> FlattenWithPaths() const {
    std::vector<std::pair<std::string, const Leaf*>> out;
    ForEach([&](const std::string& path, const Leaf& l) {
      out.emplace_back(path, &l);
    });
    return out;
  }
  int num_leaves() const {
    int n = 0;
    ForEach([&](const std::string&, const Leaf&) { ++n; });
    return n;
  }

  // Calls fn(path, leaf) for every leaf in flattening order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (is_leaf()) {
      fn(std::string("0"), leaf_);
      return;
    }
    Walk("", fn);
  }

  // Calls fn(leaf) for every leaf in flattening order, without building
  // paths or a vector (the per-element hot paths of the input pipeline).
  template <typename Fn>
  void ForEachLeaf(Fn&& fn) const {
    if (is_leaf()) {
      fn(leaf_);
      return;
    }
    for (const Nest& child : children()) child.ForEachLeaf(fn);
  }
  // As ForEachLeaf, with writable leaves.
  template <typename Fn>
  void ForEachMutableLeaf(Fn&& fn) {
    if (is_leaf()) {
      fn(leaf_);
      return;
    }
    if (branches_ == nullptr) return;
    for (Nest& child : branches_->children) child.ForEachMutableLeaf(fn);
  }

  // The same structure with every leaf replaced by fn(leaf).
  template <typename Fn>
  auto Map(Fn&& fn) const -> Nest<decltype(fn(std::declval<const Leaf&>()))> {
    using Out = Nest<decltype(fn(std::declval<const Leaf&>()))>;
    switch (kind_) {
      case Kind::kNone:
        return Out();
      case Kind::kLeaf:
        return Out(fn(leaf_));
      case Kind::kTuple: {
        std::vector<Out> c;
        for (const Nest& child : children()) c.push_back(child.Map(fn));
        return Out::Tuple(std::move(c));
      }
      case Kind::kDict: {
        std::vector<std::pair<std::string, Out>> items;
        for (size_t i = 0; i < children().size(); ++i) {
          items.emplace_back(keys()[i], children()[i].Map(fn));
        }
        return Out::Dict(std::move(items));
      }
    }
    return Out();
  }

  // Builds a nest with this structure from `leaves` in flattening order.
  // InvalidArgument if the count differs.
  template <typename T>
  absl::StatusOr<Nest<T>> Unflatten(std::vector<T> leaves) const {
    size_t next = 0;
    Nest<T> out = Rebuild<T>(leaves, next);
    if (next != leaves.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("structure ", StructureString(), " has ", next,
                       " leaves, got ", leaves.size()));
    }
    return out;
  }

  // True when `other` has the same kinds, tuple lengths and dict keys at every
  // level.
  template <typename T>
  bool SameStructure(const Nest<T>& other) const {
    if (static_cast<int>(kind_) != static_cast<int>(other.kind())) return false;
    if (children().size() != other.children().size()) return false;
    if (is_dict() && keys() != other.keys()) return false;
    for (size_t i = 0; i < children().size(); ++i) {
      if (!children()[i].SameStructure(other.children()[i])) return false;
    }
    return true;
  }

  // "(*, {a: *, b: *})", "*" for a leaf, "None".
  std::string StructureString() const {
    switch (kind_) {
      case Kind::kNone:
        return "None";
      case Kind::kLeaf:
        return "*";
      case Kind::kTuple: {
        std::vector<std::string> parts;
        for (const Nest& c : children()) parts.push_back(c.StructureString());
        return absl::StrCat("(", absl::StrJoin(parts, ", "),
                            children().size() == 1 ? ",)" : ")");
      }
      case Kind::kDict: {
        std::vector<std::string> parts;
        for (size_t i = 0; i < children().size(); ++i) {
          parts.push_back(
              absl::StrCat(keys()[i], ": ", children()[i].StructureString()));
        }
        return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
      }
    }
    return "?";
  }

 private:
  template <typename Fn>
  void Walk(const std::string& prefix, Fn& fn) const {
    switch (kind_) {
      case Kind::kNone:
        return;
      case Kind::kLeaf:
        fn(prefix, leaf_);
        return;
      case Kind::kTuple:
      case Kind::kDict:
        for (size_t i = 0; i < children().size(); ++i) {
          std::string name = is_dict() ? keys()[i] : absl::StrCat(i);
          children()[i].Walk(
              prefix.empty() ? name : absl::StrCat(prefix, "/", name), fn);
        }
        return;
    }
  }

  template <typename T>
  Nest<T> Rebuild(std::vector<T>& leaves, size_t& next) const {
    switch (kind_) {
      case Kind::kNone:
        return Nest<T>();
      case Kind::kLeaf:
        if (next >= leaves.size()) {
          ++next;
          return Nest<T>();
        }
        return Nest<T>(std::move(leaves[next++]));
      case Kind::kTuple: {
        std::vector<Nest<T>> c;
        for (const Nest& child : children())
          c.push_back(child.template Rebuild<T>(leaves, next));
        return Nest<T>::Tuple(std::move(c));
      }
      case Kind::kDict: {
        std::vector<std::pair<std::string, Nest<T>>> items;
        for (size_t i = 0; i < children().size(); ++i) {
          items.emplace_back(keys()[i],
                             children()[i].template Rebuild<T>(leaves, next));
        }
        return Nest<T>::Dict(std::move(items));
      }
    }
    return Nest<T>();
  }

  template <typename>
  friend class Nest;

  // The children of a tuple or dict, out of line so that a leaf (a dataset
  // element's usual form) is small and cheap to move.
  struct Branches {
    std::vector<Nest> children;
    std::vector<std::string> keys;
  };
  static const Branches& Empty() {
    static const Branches* empty = new Branches();
    return *empty;
  }

  Kind kind_ = Kind::kNone;
  Leaf leaf_{};
  std::unique_ptr<Branches> branches_;
};

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_NEST_H_
