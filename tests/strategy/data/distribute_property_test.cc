// tests/strategy/data/distribute_property_test.cc
//
// Seeded property tests of experimental_distribute_dataset: random (dataset
// size or files, batch size, drop_remainder, W, R, policy, semantics version).
// Under FILE and DATA (and with a single worker) no element is delivered twice
// and, with drop_remainder=false, none is lost; under OFF every worker sees all
// the data. The spec's error cases are excluded from those checks and instead
// must give their error: FILE after a 2.2 Case-2 rebatch and FILE over a range
// (NotFound), fewer files than workers and DATA with 1 <= M < W minibatches
// (InvalidArgument naming both numbers).

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/distribute.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Tensor;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

struct Case {
  int index;
  bool from_files;
  int64_t size;                       // range(size) when !from_files
  std::vector<int> records_per_file;  // when from_files
  int64_t batch;
  bool drop;
  int w, r;
  AutoShardPolicy policy;
  bool v24;
  // map_and_batch(identity) instead of batch: TF's rewrites treat both alike,
  // so every expectation is the same.
  bool map_and_batch = false;

  std::string Describe() const {
    std::string src = from_files
                          ? absl::StrCat("files(", records_per_file.size(), ")")
                          : absl::StrCat("range(", size, ")");
    return absl::StrCat("case ", index, ": ", src,
                        map_and_batch ? ".map_and_batch(identity, " : ".batch(",
                        batch, ", ", drop, ") W=", w, " R=", r,
                        " policy=", AutoShardPolicyName(policy),
                        v24 ? " v2.4" : " v2.2");
  }
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The values of every element, in order, as strings.
std::vector<std::string> AllValues(const Case& c,
                                   std::vector<std::string>* files) {
  std::vector<std::string> values;
  if (!c.from_files) {
    for (int64_t i = 0; i < c.size; ++i) values.push_back(absl::StrCat(i));
    return values;
  }
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/distribute_property_", c.index);
  EXPECT_EQ(std::system(absl::StrCat("mkdir -p ", dir).c_str()), 0);
  int next = 0;
  for (size_t k = 0; k < c.records_per_file.size(); ++k) {
    std::vector<std::string> records;
    for (int j = 0; j < c.records_per_file[k]; ++j)
      records.push_back(absl::StrCat(next++));
    const std::string path = absl::StrCat(dir, "/f", k, ".tfrecord");
    EXPECT_THAT(WriteTFRecordFile(path, records), IsOk());
    files->push_back(path);
    values.insert(values.end(), records.begin(), records.end());
  }
  return values;
}

Dataset MakeDataset(const Case& c, const std::vector<std::string>& files) {
  Dataset base =
      c.from_files ? Dataset::TFRecord(files) : Dataset::Range(c.size);
  Options o;
  o.auto_shard_policy = c.policy;
  if (c.map_and_batch) {
    MapFunction identity;
    identity.name = "identity";
    identity.fn = [](const Element& e) -> absl::StatusOr<Element> { return e; };
    identity.spec_fn =
        [](const ElementSpec& in) -> absl::StatusOr<ElementSpec> { return in; };
    return base.MapAndBatch(identity, c.batch, c.drop).WithOptions(o);
  }
  return base.Batch(c.batch, c.drop).WithOptions(o);
}

std::vector<std::string> StringsOf(const Element& e) {
  std::vector<std::string> out;
  const Tensor& t = e.leaf();
  if (t.dtype() == DType::kBytes) {
    for (const std::string& s : t.values<std::string>()) out.push_back(s);
  } else {
    for (int64_t i = 0; i < t.num_elements(); ++i)
      out.push_back(absl::StrCat(t.AsInt64(i)));
  }
  return out;
}

Case RandomCase(std::mt19937_64& rng, int index) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  Case c;
  c.index = index;
  c.from_files = uniform(0, 1) == 1;
  c.size = uniform(0, 40);
  const int num_files = uniform(1, 6);
  for (int k = 0; k < num_files; ++k)
    c.records_per_file.push_back(uniform(0, 5));
  c.batch = uniform(1, 10);
  c.drop = uniform(0, 3) == 0;
  c.w = uniform(1, 4);
  c.r = uniform(1, 3);
  const AutoShardPolicy policies[] = {
      AutoShardPolicy::kOff, AutoShardPolicy::kData, AutoShardPolicy::kFile,
      AutoShardPolicy::kAuto};
  c.policy = policies[uniform(0, 3)];
  c.v24 = uniform(0, 3) == 0;
  c.map_and_batch = index % 2 == 1;  // not drawn: the random stream is kept
  return c;
}

TEST(DistributePropertyTest, RandomPipelinesKeepEveryElementExactlyOnce) {
  std::mt19937_64 rng(20220623);
  int checked_success = 0, checked_errors = 0;
  for (int index = 0; index < 300; ++index) {
    const Case c = RandomCase(rng, index);
    SCOPED_TRACE(c.Describe());
    std::vector<std::string> files;
    const std::vector<std::string> all = AllValues(c, &files);
    const int64_t n = int64_t{c.w} * c.r;
    const int64_t num_files = static_cast<int64_t>(files.size());
    // What survives drop_remainder.
    const int64_t kept_count =
        c.drop ? (static_cast<int64_t>(all.size()) / c.batch) * c.batch
               : all.size();
    const std::vector<std::string> kept(all.begin(), all.begin() + kept_count);
    // Global batch sizes and the 2.2 minibatch count M.
    std::vector<int64_t> batches;
    for (int64_t left = kept_count; left > 0; left -= c.batch) {
      batches.push_back(std::min<int64_t>(left, c.batch));
    }
    const bool case1 = !c.drop && c.batch % n == 0;
    const int64_t piece = case1 ? c.batch / n : CeilDiv(c.batch, n);
    int64_t minibatches = 0;
    for (int64_t p : batches) {
      minibatches += c.v24 ? n : CeilDiv(p, piece);
    }

    // The expected error, if any.
    enum class Expect {
      kOk,
      kNotFound,
      kFewFiles,
      kFewMinibatches
    } expect = Expect::kOk;
    if (c.w > 1 && c.policy != AutoShardPolicy::kOff) {
      const bool file_possible = c.from_files && (c.v24 || case1);
      bool data = c.policy == AutoShardPolicy::kData;
      if (c.policy == AutoShardPolicy::kFile && !file_possible)
        expect = Expect::kNotFound;
      if (c.policy == AutoShardPolicy::kFile ||
          c.policy == AutoShardPolicy::kAuto) {
        if (file_possible && num_files < c.w) expect = Expect::kFewFiles;
        if (c.policy == AutoShardPolicy::kAuto && !file_possible) data = true;
      }
      if (data && minibatches >= 1 && minibatches < c.w)
        expect = Expect::kFewMinibatches;
    }

    DistributeOptions options;
    options.semantics_version = c.v24 ? "2.4" : "2.2";
    absl::StatusOr<DistributedDataset> dist = DistributeDataset(
        MakeDataset(c, files), InputWorkers::Uniform(c.w, c.r), options);
    if (expect == Expect::kNotFound) {
      EXPECT_THAT(dist, StatusIs(absl::StatusCode::kNotFound, ::testing::_));
      ++checked_errors;
      continue;
    }
    ASSERT_THAT(dist, IsOk());
    absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
    ASSERT_THAT(it, IsOk());
    std::vector<std::vector<std::string>> per_worker(c.w);
    absl::Status end;
    int steps = 0;
    while (steps < 10000) {
      absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
      if (!step.ok()) {
        end = step.status();
        break;
      }
      ++steps;
      ASSERT_EQ(step->num_replicas(), n);
      for (int64_t rep = 0; rep < n; ++rep) {
        std::vector<std::string> v = StringsOf((*step)[rep]);
        per_worker[rep / c.r].insert(per_worker[rep / c.r].end(), v.begin(),
                                     v.end());
      }
    }
    if (expect == Expect::kFewFiles) {
      if (c.v24) {
        EXPECT_THAT(
            end,
            StatusIs(
                absl::StatusCode::kInvalidArgument,
                AllOf(
                    HasSubstr(absl::StrCat("only has ", num_files, " file(s)")),
                    HasSubstr(absl::StrCat("required ", c.w, " shards")))));
      } else {
        EXPECT_THAT(
            end,
            StatusIs(absl::StatusCode::kInvalidArgument,
                     AllOf(HasSubstr(absl::StrCat("# elems = ", num_files)),
                           HasSubstr(absl::StrCat("# shards = ", c.w)))));
      }
      EXPECT_EQ(steps, 0);
      ++checked_errors;
      continue;
    }
    if (expect == Expect::kFewMinibatches) {
      EXPECT_THAT(
          end,
          StatusIs(absl::StatusCode::kInvalidArgument,
                   AllOf(HasSubstr(absl::StrCat("# elems = ", minibatches)),
                         HasSubstr(absl::StrCat("# shards = ", c.w)))));
      EXPECT_EQ(steps, 0);
      ++checked_errors;
      continue;
    }
    EXPECT_THAT(end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
    std::multiset<std::string> kept_set(kept.begin(), kept.end());
    auto check_subset_once = [&](const std::vector<std::string>& got) {
      std::map<std::string, int> count;
      for (const std::string& v : got) {
        EXPECT_EQ(++count[v], 1) << "value " << v << " delivered twice";
        EXPECT_TRUE(kept_set.count(v))
            << "value " << v << " was never in the data";
      }
    };
    if (c.w > 1 && c.policy == AutoShardPolicy::kOff) {
      for (int w = 0; w < c.w; ++w) {
        check_subset_once(per_worker[w]);
        if (!c.drop) {
          EXPECT_EQ(std::multiset<std::string>(per_worker[w].begin(),
                                               per_worker[w].end()),
                    kept_set)
              << "worker " << w;
        }
      }
    } else {
      std::vector<std::string> got;
      for (const auto& v : per_worker)
        got.insert(got.end(), v.begin(), v.end());
      check_subset_once(got);
      if (!c.drop)
        EXPECT_EQ(std::multiset<std::string>(got.begin(), got.end()), kept_set);
    }
    ++checked_success;
  }
  // The generator must exercise both kinds of outcome.
  EXPECT_GT(checked_success, 100);
  EXPECT_GT(checked_errors, 20);
}

// ---- Placement: each replica's own list, in order, against a model ----
//
// An independent model of TF 2.2's experimental_distribute_dataset for
// pipelines over range(): the rebatch (Case 1: batch(B / N); Case 2: every
// global batch cut into pieces of ceil(B / N) rows; the fallback when the
// pipeline has no batch: every element of L = N * p values cut into N pieces
// of p, after any take), a take after the batch (which then counts
// minibatches: the rewrite passes through it), DATA
// sharding (worker w keeps minibatches k with k % W == w; AUTO over a range
// falls back to it) or OFF (every worker keeps all), then round-robin: at
// step s replica j of worker w gets its worker's minibatch s * R + j. With a
// static per-replica shape (fallback; Case 2 with drop_remainder and N | B)
// the steps stop when any replica has no minibatch; otherwise they go on while
// some worker's first replica has one, and replicas without get [].

struct PlacementCase {
  int index;
  int64_t size;   // range(size)
  int64_t batch;  // B; 0 = no batch (fallback over rows of `width`)
  int64_t width;  // fallback: elements are rows of this many values
  bool drop;
  int64_t take;  // -1 = no take after the batch
  bool zip;      // zip((ds, ds)): both components carry the same rows
  int w, r;
  AutoShardPolicy policy;

  std::string Describe() const {
    return absl::StrCat(
        "placement case ", index, ": ",
        batch == 0
            ? absl::StrCat("rows(", size, " x ", width, ")")
            : absl::StrCat("range(", size, ").batch(", batch, ", ", drop, ")"),
        take >= 0 ? absl::StrCat(".take(", take, ")") : "",
        zip ? " zipped" : "", " W=", w, " R=", r,
        " policy=", AutoShardPolicyName(policy));
  }
};

using Rows = std::vector<int64_t>;

Dataset PlacementDataset(const PlacementCase& c) {
  Dataset ds;
  if (c.batch == 0) {
    std::vector<int64_t> v(c.size * c.width);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
    ds = Dataset::FromTensorSlices(Element(
        Tensor::FromVector<int64_t>(runtime::Shape({c.size, c.width}), v)));
  } else {
    ds = Dataset::Range(c.size).Batch(c.batch, c.drop);
  }
  if (c.take >= 0) ds = ds.Take(c.take);
  if (c.zip) ds = Dataset::Zip({ds, ds});
  Options o;
  o.auto_shard_policy = c.policy;
  return ds.WithOptions(o);
}

// The model's steps: [step][replica] -> rows; `error` when DATA sharding has
// fewer minibatches than workers (1 <= M < W).
std::vector<std::vector<Rows>> ModelSteps(const PlacementCase& c, bool* error) {
  const int64_t n = int64_t{c.w} * c.r;
  std::vector<Rows> mini;
  bool is_static = false;
  if (c.batch == 0) {
    // The fallback is applied at the end of the pipeline: a take counts the
    // elements before they are cut.
    const int64_t p = c.width / n;
    const int64_t rows = c.take >= 0 ? std::min(c.size, c.take) : c.size;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t k = 0; k < n; ++k) {
        Rows piece;
        for (int64_t j = 0; j < p; ++j)
          piece.push_back(i * c.width + k * p + j);
        mini.push_back(piece);
      }
    }
    is_static = true;
  } else {
    const bool case1 = !c.drop && c.batch % n == 0;
    const int64_t m = case1 ? c.batch / n : (c.batch + n - 1) / n;
    is_static = c.drop && c.batch % n == 0;
    for (int64_t start = 0; start < c.size; start += c.batch) {
      const int64_t end = std::min(c.size, start + c.batch);
      if (c.drop && end - start < c.batch) break;
      for (int64_t p = start; p < end; p += m) {
        Rows piece;
        for (int64_t v = p; v < std::min(end, p + m); ++v) piece.push_back(v);
        mini.push_back(piece);
      }
    }
  }
  if (c.batch > 0 && c.take >= 0 &&
      static_cast<int64_t>(mini.size()) > c.take) {
    mini.resize(c.take);
  }
  std::vector<std::vector<Rows>> per_worker(c.w);
  const bool data = c.w > 1 && c.policy != AutoShardPolicy::kOff;
  *error = data && !mini.empty() && static_cast<int64_t>(mini.size()) < c.w;
  for (int w = 0; w < c.w; ++w) {
    for (size_t k = 0; k < mini.size(); ++k) {
      if (!data || static_cast<int64_t>(k % c.w) == w)
        per_worker[w].push_back(mini[k]);
    }
  }
  std::vector<std::vector<Rows>> steps;
  for (int64_t s = 0;; ++s) {
    bool any_first = false, all = true;
    for (int w = 0; w < c.w; ++w) {
      const int64_t len = static_cast<int64_t>(per_worker[w].size());
      any_first = any_first || s * c.r < len;
      all = all && s * c.r + c.r - 1 < len;
    }
    if (is_static ? !all : !any_first) break;
    std::vector<Rows>& step = steps.emplace_back();
    for (int w = 0; w < c.w; ++w) {
      for (int j = 0; j < c.r; ++j) {
        const size_t k = s * c.r + j;
        step.push_back(k < per_worker[w].size() ? per_worker[w][k] : Rows{});
      }
    }
  }
  return steps;
}

PlacementCase RandomPlacementCase(std::mt19937_64& rng, int index) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  PlacementCase c;
  c.index = index;
  c.w = uniform(1, 4);
  c.r = uniform(1, 3);
  const int64_t n = int64_t{c.w} * c.r;
  if (uniform(0, 4) == 0) {  // fallback: no batch op
    c.batch = 0;
    c.size = uniform(0, 6);
    c.width = n * uniform(1, 3);
    c.drop = false;
  } else {
    c.batch = uniform(1, 12);
    c.size = uniform(0, 40);
    c.width = 0;
    c.drop = uniform(0, 2) == 0;
  }
  c.take = uniform(0, 2) == 0 ? uniform(0, 8) : -1;
  c.zip = uniform(0, 3) == 0;
  const AutoShardPolicy policies[] = {
      AutoShardPolicy::kOff, AutoShardPolicy::kData, AutoShardPolicy::kAuto};
  c.policy = policies[uniform(0, 2)];
  return c;
}

TEST(DistributePropertyTest, EachReplicaGetsItsOwnMinibatchesInOrder) {
  std::mt19937_64 rng(20261203);
  int compared = 0, errors = 0, fallbacks = 0, zips = 0, takes = 0, drops = 0;
  for (int index = 0; index < 400; ++index) {
    const PlacementCase c = RandomPlacementCase(rng, index);
    SCOPED_TRACE(c.Describe());
    bool error = false;
    const std::vector<std::vector<Rows>> want = ModelSteps(c, &error);
    absl::StatusOr<DistributedDataset> dist =
        DistributeDataset(PlacementDataset(c), InputWorkers::Uniform(c.w, c.r));
    ASSERT_THAT(dist, IsOk());
    absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
    ASSERT_THAT(it, IsOk());
    std::vector<std::vector<Rows>> got;
    absl::Status end;
    while (got.size() < 1000) {
      absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
      if (!step.ok()) {
        end = step.status();
        break;
      }
      std::vector<Rows>& rows = got.emplace_back();
      for (int rep = 0; rep < step->num_replicas(); ++rep) {
        const std::vector<const Tensor*> leaves = (*step)[rep].Flatten();
        ASSERT_EQ(leaves.size(), c.zip ? 2u : 1u);
        Rows v;
        for (int64_t i = 0; i < leaves[0]->num_elements(); ++i)
          v.push_back(leaves[0]->AsInt64(i));
        if (c.zip) {
          Rows second;
          for (int64_t i = 0; i < leaves[1]->num_elements(); ++i)
            second.push_back(leaves[1]->AsInt64(i));
          EXPECT_EQ(second, v) << "zip components differ, replica " << rep;
        }
        rows.push_back(v);
      }
    }
    if (error) {
      EXPECT_THAT(end, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr(absl::StrCat("# shards = ", c.w))));
      EXPECT_TRUE(got.empty());
      ++errors;
      continue;
    }
    EXPECT_THAT(end, StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
    EXPECT_EQ(got, want);
    ++compared;
    fallbacks += c.batch == 0;
    zips += c.zip;
    takes += c.take >= 0;
    drops += c.drop;
  }
  EXPECT_GT(compared, 250);
  EXPECT_GT(errors, 5);
  EXPECT_GT(fallbacks, 30);
  EXPECT_GT(zips, 50);
  EXPECT_GT(takes, 50);
  EXPECT_GT(drops, 50);
}

}  // namespace
}  // namespace tpusim::data
