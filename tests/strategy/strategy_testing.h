// tests/strategy/strategy_testing.h
//
// Test helpers: a HostBackend laid out as a named slice and a TPUStrategy over
// it.

#ifndef TPUSIM_TESTS_STRATEGY_STRATEGY_TESTING_H_
#define TPUSIM_TESTS_STRATEGY_STRATEGY_TESTING_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "strategy/cluster_resolver.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/slice.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::strategy::testing {

struct StrategyFixture {
  std::unique_ptr<runtime::HostBackend> backend;
  std::unique_ptr<TPUClusterResolver> resolver;
  std::unique_ptr<TPUStrategy> strategy;
};

// A HostBackend with the devices of `slice` ("v3-8", or "plain:WxD" for W
// workers with D devices each), a resolver bound to it and a TPUStrategy with
// `options`.
inline StrategyFixture MakeStrategy(const std::string& slice = "v3-8",
                                    TPUStrategyOptions options = {}) {
  StrategyFixture f;
  if (slice.rfind("plain:", 0) == 0) {
    const size_t x = slice.find('x');
    const int workers = std::stoi(slice.substr(6, x - 6));
    const int per_worker = std::stoi(slice.substr(x + 1));
    absl::StatusOr<TPUClusterResolver> r =
        TPUClusterResolver::CreatePlain(workers, per_worker);
    TPUSIM_CHECK(r.ok()) << r.status();
    f.backend = std::make_unique<runtime::HostBackend>(r->devices());
    f.resolver = std::make_unique<TPUClusterResolver>(*std::move(r));
  } else {
    absl::StatusOr<runtime::SliceLayout> layout = runtime::ParseSlice(slice);
    TPUSIM_CHECK(layout.ok()) << layout.status();
    f.backend = std::make_unique<runtime::HostBackend>(layout->devices);
    absl::StatusOr<TPUClusterResolver> r =
        TPUClusterResolver::Create(*f.backend, slice);
    TPUSIM_CHECK(r.ok()) << r.status();
    f.resolver = std::make_unique<TPUClusterResolver>(*std::move(r));
  }
  absl::StatusOr<std::unique_ptr<TPUStrategy>> s =
      TPUStrategy::Create(*f.backend, *f.resolver, std::move(options));
  TPUSIM_CHECK(s.ok()) << s.status();
  f.strategy = *std::move(s);
  return f;
}

inline runtime::Tensor F32(float v) {
  return runtime::Tensor::Scalar<float>(v);
}
inline runtime::Tensor F32s(std::vector<float> v) {
  return runtime::Tensor::Vector<float>(std::move(v));
}

// Float values of a tensor leaf.
inline std::vector<double> Values(const runtime::Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.AsDouble(i));
  return out;
}

// Per-replica scalar values of a PerReplica leaf.
inline std::vector<double> ReplicaScalars(const Value& v) {
  TPUSIM_CHECK(v.is_per_replica()) << v.DebugString();
  std::vector<double> out;
  for (const runtime::Tensor& t : v.components()) out.push_back(t.AsDouble(0));
  return out;
}

}  // namespace tpusim::strategy::testing

#endif  // TPUSIM_TESTS_STRATEGY_STRATEGY_TESTING_H_
