// strategy/data/sparse.h
//
// tf.SparseTensor components of dataset elements.
//
// A sparse component travels through a pipeline "boxed", the way TF's dataset
// kernels carry it (TF: a DT_VARIANT tensor whose elements are serialized
// SparseTensors): the component's tensor is a string tensor whose every
// element is one encoded SparseTensor, and its spec says so
// (runtime::TensorSpec::sparse). Because a box is an ordinary tensor element,
// batch stacks boxes, unbatch / from_tensor_slices / the rebatch pieces slice
// them, and shard, zip, take, ... pass them through, with no sparse-specific
// code; and every row keeps its own dense_shape, as in TF. Where TF turns the
// boxes back into a SparseTensor (DeserializeSparse: at an iterator's output,
// e.g. the per-replica values), UnboxSparse does: a batch of B boxes becomes
// one SparseTensor whose indices gain the box index in front and whose
// dense_shape is [B, the per-dimension maximum of the boxes' dense shapes].
//
// clang-format off
//   SparseTensor st{Tensor::FromVector<int64_t>(Shape({2, 1}), {0, 2}),
//                   Tensor::Vector<int64_t>({7, 8}), Tensor::Vector<int64_t>({3})};
//   TPUSIM_ASSIGN_OR_RETURN(Tensor box, BoxSparse(st, "x"));   // a string scalar
//   TensorSpec spec = SparseComponentSpec(DType::kI64, Shape({3}));
//   TPUSIM_ASSIGN_OR_RETURN(SparseTensor back, UnboxSparse(box, spec, "x"));
// clang-format on

#ifndef TPUSIM_STRATEGY_DATA_SPARSE_H_
#define TPUSIM_STRATEGY_DATA_SPARSE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/data/dataset.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::data {

// A tf.SparseTensor value.
struct SparseTensor {
  runtime::Tensor indices;      // int64 [n, rank], row-major order
  runtime::Tensor values;       // [n]
  runtime::Tensor dense_shape;  // int64 [rank]
  // "SparseTensor(indices=[[0, 1]], values=[5], dense_shape=[1, 2])".
  std::string DebugString() const;
  friend bool operator==(const SparseTensor& a, const SparseTensor& b) {
    return a.indices == b.indices && a.values == b.values &&
           a.dense_shape == b.dense_shape;
  }
};

// The spec of a sparse component: boxes of shape `box_shape` (a scalar for one
// SparseTensor), each a SparseTensor of values `dtype` and dense shape
// `shape`.
runtime::TensorSpec SparseComponentSpec(runtime::DType dtype,
                                        runtime::Shape shape,
                                        runtime::Shape box_shape = {});
// The tf.SparseTensorSpec shape of a component: the box shape followed by the
// boxed SparseTensors' shape (unknown rank when either is). A dense
// component's shape unchanged.
runtime::Shape LogicalShape(const runtime::TensorSpec& spec);
// True when some component of `spec` is sparse.
bool HasSparseComponent(const ElementSpec& spec);

// TF's checks of a SparseTensor (SparseTensor::Create and IndicesValid):
// indices int64 [n, rank], values [n], dense_shape int64 [rank] with dims >= 0,
// every index inside dense_shape, in row-major order and not repeated.
// InvalidArgument naming `name` and the offending index, with TF's phrases
// ("indices[1] = [0,1] is out of order", "is out of bounds: need 0 <= index <
// [2,3]", "is repeated").
absl::Status ValidateSparse(const SparseTensor& st, absl::string_view name);

// tf.io.serialize_sparse into a box: a string scalar holding `st`. Validates
// it first (ValidateSparse).
absl::StatusOr<runtime::Tensor> BoxSparse(const SparseTensor& st,
                                          absl::string_view name);
// tf.io.serialize_many_sparse: the rows of `st` along dimension 0 as a
// [dense_shape[0]] box tensor; row i holds the entries whose first index is i,
// without it, and has dense_shape[1:]. Validates; rank >= 1.
absl::StatusOr<runtime::Tensor> BoxSparseRows(const SparseTensor& st,
                                              absl::string_view name);
// tf.io.deserialize_sparse of a box tensor of component spec `spec`: one
// SparseTensor of rank (box rank + boxed rank); indices are prefixed by each
// box's index (boxes in row-major order); dense_shape is the box shape
// followed by the per-dimension maximum of the boxes' dense shapes (with no
// boxes: the dimensions spec.sparse->shape knows, else 0). InvalidArgument
// naming `name` when an element is not an encoded SparseTensor, or boxes
// differ in rank or dtype; FailedPrecondition when `spec` is not sparse or the
// tensor is abstract.
absl::StatusOr<SparseTensor> UnboxSparse(const runtime::Tensor& boxes,
                                         const runtime::TensorSpec& spec,
                                         absl::string_view name);
// An elementwise op on a SparseTensor (tf.math.square(st), ...): `fn` maps
// the values of every SparseTensor in `boxes` (component spec `spec`) to new
// values of the same count (their dtype may change); indices and dense shapes
// stay. Errors: UnboxSparse's, `fn`'s, and InvalidArgument when `fn` changes
// the number of values.
absl::StatusOr<runtime::Tensor> MapSparseValues(
    const runtime::Tensor& boxes, const runtime::TensorSpec& spec,
    absl::string_view name,
    const std::function<
        absl::StatusOr<runtime::Tensor>(const runtime::Tensor&)>& fn);

// tf.data.Dataset.from_tensor_slices(sparse_tensor): one element per row of
// `st` along dimension 0, each a SparseTensor of dense_shape[1:]: as TF, a
// TensorSliceDataset over the rows boxed by serialize_many_sparse
// (BoxSparseRows). An invalid `st` (ValidateSparse; TF's SerializeManySparse
// checks the order too) gives a Dataset carrying the InvalidArgument, naming
// `name`.
Dataset SparseTensorSlices(const SparseTensor& st,
                           absl::string_view name = "sparse_tensor");

// tf.data.Dataset.from_tensors(sparse_tensor): one element, `st` itself (a
// TensorDataset over its box), of spec SparseTensor(dense_shape as given). An
// invalid `st` gives a Dataset carrying the InvalidArgument, naming `name`.
Dataset SparseTensorDataset(const SparseTensor& st,
                            absl::string_view name = "sparse_tensor");

// The empty sparse value of a replica without data (TF's _dummy_tensor_fn for
// a SparseTensorSpec): dims = the logical shape with unknown dims 0 and, when
// the shape is fully known, dimension 0 set to 0; the SparseTensor has indices
// [0, len(dims)], values [0] and dense_shape dims. Returned boxed under
// `spec`: the box shape with those dims, every box an empty SparseTensor of
// the remaining dims (a box tensor of zero boxes when dims[0] is 0, which
// unboxes to dense_shape dims).
runtime::Tensor DummySparseBoxes(const runtime::TensorSpec& spec);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_SPARSE_H_
