// Tests of the file-reading datasets (TFRecord, TextLine, FixedLengthRecord),
// list_files and globbing.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/data/dataset.h"
#include "strategy/data/dataset_nodes.h"
#include "strategy/data/glob.h"
#include "strategy/data/tfrecord.h"
#include "tests/strategy/data/test_files.h"

namespace tpusim::data {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::tpusim::data::testing::FreshTempDir;
using ::tpusim::data::testing::WriteFile;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

using Strings = std::vector<std::string>;

Strings Collect(const Dataset& ds) {
  absl::StatusOr<std::vector<Element>> all = ds.Collect();
  EXPECT_THAT(all, IsOk());
  Strings out;
  if (!all.ok()) return out;
  for (const Element& e : *all) out.push_back(e.leaf().scalar<std::string>());
  return out;
}

// Paths relative to `dir`.
Strings Relative(const std::string& dir, Strings paths) {
  for (std::string& p : paths) p = p.substr(dir.size() + 1);
  return paths;
}

// ---- TFRecordDataset ----

TEST(ReadersTest, TFRecordDatasetReadsFilesInOrder) {
  const std::string dir = FreshTempDir();
  ASSERT_THAT(WriteTFRecordFile(dir + "/a", {"a0", "a1"}), IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/b", {"b0"}), IsOk());
  EXPECT_THAT(Collect(Dataset::TFRecord({dir + "/b", dir + "/a"})),
              ElementsAre("b0", "a0", "a1"));
}

TEST(ReadersTest, TFRecordDatasetCorruptFileIsDataLossAfterGoodRecords) {
  const std::string dir = FreshTempDir();
  const std::string path = dir + "/bad.tfrecord";
  std::string bytes = EncodeTFRecord("ok") + EncodeTFRecord("broken");
  bytes[bytes.size() - 1] ^= 0x10;  // the data CRC of record 2
  WriteFile(path, bytes);
  absl::StatusOr<IteratorPtr> it = Dataset::TFRecord({path}).MakeIterator();
  ASSERT_THAT(it, IsOk());
  absl::StatusOr<std::optional<Element>> first = (*it)->GetNext();
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ((*first)->leaf().scalar<std::string>(), "ok");
  EXPECT_THAT((*it)->GetNext(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path),
                             HasSubstr("corrupted record at byte offset 18"))));
}

TEST(ReadersTest, TFRecordDatasetMissingFileIsNotFound) {
  const std::string path = FreshTempDir() + "/nope.tfrecord";
  EXPECT_THAT(Dataset::TFRecord({path}).Collect().status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(ReadersTest, TFRecordDatasetWithParallelReadsInterleavesFiles) {
  const std::string dir = FreshTempDir();
  ASSERT_THAT(WriteTFRecordFile(dir + "/a", {"a0", "a1", "a2"}), IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/b", {"b0"}), IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/c", {"c0", "c1"}), IsOk());
  TFRecordOptions o;
  o.num_parallel_reads = 2;
  EXPECT_THAT(
      Collect(Dataset::TFRecord({dir + "/a", dir + "/b", dir + "/c"}, o)),
      // b ends at its second visit; that visit moves on to slot 0
      // (a2) before c fills b's slot, as TF's InterleaveDataset.
      ElementsAre("a0", "b0", "a1", "a2", "c0", "c1"));
}

// ---- TextLineDataset ----

TEST(ReadersTest, TextLineStripsNewlinesAndKeepsUnterminatedLastLine) {
  const std::string dir = FreshTempDir();
  WriteFile(dir + "/a.txt", "alpha\nbeta\r\ngamma");
  WriteFile(dir + "/b.txt", "x\n\n");
  WriteFile(dir + "/empty.txt", "");
  EXPECT_THAT(Collect(Dataset::TextLine(
                  {dir + "/a.txt", dir + "/empty.txt", dir + "/b.txt"})),
              ElementsAre("alpha", "beta", "gamma", "x", ""));
}

TEST(ReadersTest, TextLineDropsEveryCarriageReturnAsTensorFlowDoes) {
  // TF's BufferedInputStream::ReadLine drops every '\r', wherever it is; an
  // unterminated last line that is empty after that is no record.
  const std::string dir = FreshTempDir();
  WriteFile(dir + "/a.txt", "a\rb\nend\r");
  WriteFile(dir + "/b.txt", "\r\nx\n\r");
  EXPECT_THAT(Collect(Dataset::TextLine({dir + "/a.txt", dir + "/b.txt"})),
              ElementsAre("ab", "end", "", "x"));
}

// ---- FixedLengthRecordDataset ----

TEST(ReadersTest, FixedLengthSkipsHeaderAndFooter) {
  const std::string dir = FreshTempDir();
  WriteFile(dir + "/a.bin", "HHaaaabbbbFFF");
  WriteFile(dir + "/b.bin", "HHccccFFF");
  FixedLengthRecordOptions o;
  o.record_bytes = 4;
  o.header_bytes = 2;
  o.footer_bytes = 3;
  EXPECT_THAT(
      Collect(Dataset::FixedLengthRecord({dir + "/a.bin", dir + "/b.bin"}, o)),
      ElementsAre("aaaa", "bbbb", "cccc"));
}

TEST(ReadersTest, FixedLengthPartialTrailingRecordIsInvalidArgument) {
  // TF (fixed_length_record_dataset_op.cc) rejects a body that is not a whole
  // number of records when it opens the file.
  const std::string dir = FreshTempDir();
  const std::string path = dir + "/a.bin";
  WriteFile(path, "aaaabbbbc");
  FixedLengthRecordOptions o;
  o.record_bytes = 4;
  EXPECT_THAT(
      Dataset::FixedLengthRecord({path}, o).Collect().status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(path), HasSubstr("has body length 9 bytes"),
                     HasSubstr("not an exact multiple of the record "
                               "length (4 bytes)"))));
}

TEST(ReadersTest, FixedLengthValidatesSizes) {
  FixedLengthRecordOptions o;
  o.record_bytes = 0;
  EXPECT_THAT(Dataset::FixedLengthRecord({"a"}, o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("record_bytes must be > 0, got 0")));
  o.record_bytes = 1;
  o.header_bytes = -1;
  EXPECT_THAT(
      Dataset::FixedLengthRecord({"a"}, o).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("header_bytes and footer_bytes must be >= 0")));
}

// ---- globbing ----

class GlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTempDir();
    for (const char* name : {"b.txt", "a.txt", "c.dat", "ab.txt"}) {
      WriteFile(dir_ + "/" + name, "x");
    }
    std::filesystem::create_directories(dir_ + "/sub");
    WriteFile(dir_ + "/sub/d.txt", "x");
  }
  Strings Match(Strings patterns) {
    for (std::string& p : patterns) p = dir_ + "/" + p;
    absl::StatusOr<Strings> m = MatchingFiles(patterns);
    EXPECT_THAT(m, IsOk());
    return m.ok() ? Relative(dir_, *m) : Strings();
  }
  std::string dir_;
};

TEST_F(GlobTest, StarMatchesWithinOneComponentInBytewiseOrder) {
  EXPECT_THAT(Match({"*.txt"}), ElementsAre("a.txt", "ab.txt", "b.txt"));
  EXPECT_THAT(Match({"*"}),
              ElementsAre("a.txt", "ab.txt", "b.txt", "c.dat", "sub"));
  EXPECT_THAT(Match({"*/*.txt"}), ElementsAre("sub/d.txt"));
}

// Issue 22: a glob is bounded in directories listed and paths held, and its
// error names the pattern and the bound.
TEST_F(GlobTest, ExpansionIsBoundedAndTheErrorNamesTheBound) {
  GlobLimits two_dirs;
  two_dirs.max_directories = 2;
  EXPECT_THAT(MatchingFiles({dir_ + "/*/*.txt"}, two_dirs), IsOk());
  GlobLimits one_dir;
  one_dir.max_directories = 1;
  EXPECT_THAT(MatchingFiles({dir_ + "/*/*.txt"}, one_dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("file pattern \"", dir_,
                                    "/*/*.txt\" needs more than 1 directories "
                                    "listed (the glob limit); narrow the "
                                    "pattern")));
  // Paths: the entries of a directory listed, and the matches. dir_ holds 5
  // entries, 3 of them *.txt.
  GlobLimits few_paths;
  few_paths.max_paths = 5;
  EXPECT_THAT(MatchingFiles({dir_ + "/*.txt"}, few_paths), IsOk());
  GlobLimits four_paths;
  four_paths.max_paths = 4;
  EXPECT_THAT(MatchingFiles({dir_ + "/*"}, four_paths),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("file pattern \"", dir_,
                                    "/*\" needs more than 4 paths (the glob "
                                    "limit); narrow the pattern")));
  // The limits hold for all patterns of one call together (3 + 2 matches,
  // then no room).
  EXPECT_THAT(MatchingFiles({dir_ + "/*.txt", dir_ + "/a*"}, few_paths),
              IsOk());
  EXPECT_THAT(
      MatchingFiles({dir_ + "/*.txt", dir_ + "/a*", dir_ + "/?.txt"},
                    few_paths),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("/?.txt\" needs more than 5 paths")));
  // Files among the candidates are not directories listed.
  EXPECT_THAT(MatchingFiles({dir_ + "/*/*"}, two_dirs), IsOk());
}

TEST_F(GlobTest, QuestionMarkAndClasses) {
  EXPECT_THAT(Match({"?.txt"}), ElementsAre("a.txt", "b.txt"));
  EXPECT_THAT(Match({"[bc].*"}), ElementsAre("b.txt", "c.dat"));
}

TEST_F(GlobTest, MatchesOfAllPatternsAreSortedTogetherKeepingDuplicates) {
  EXPECT_THAT(Match({"c.dat", "a*"}), ElementsAre("a.txt", "ab.txt", "c.dat"));
  EXPECT_THAT(Match({"a.txt", "?.txt"}),
              ElementsAre("a.txt", "a.txt", "b.txt"));
}

TEST_F(GlobTest, LiteralPathsMatchOnlyWhenTheyExist) {
  EXPECT_THAT(Match({"a.txt", "zzz.txt", "nodir/*.txt"}), ElementsAre("a.txt"));
}

// ---- list_files ----

TEST_F(GlobTest, ListFilesWithoutShuffleIsSorted) {
  Dataset ds = Dataset::ListFiles({dir_ + "/*.txt"}, /*shuffle=*/false);
  EXPECT_EQ(ElementSpecToString(ds.element_spec()), "string[]");
  EXPECT_THAT(Relative(dir_, Collect(ds)),
              ElementsAre("a.txt", "ab.txt", "b.txt"));
  EXPECT_EQ(ds.node()->op(), TensorSliceNode::kOp);
}

TEST_F(GlobTest, ListFilesShuffleIsDeterministicPerSeed) {
  for (int i = 0; i < 6; ++i) WriteFile(dir_ + "/f" + std::to_string(i), "x");
  Dataset a = Dataset::ListFiles({dir_ + "/*"}, true, 7);
  ASSERT_EQ(a.node()->op(), ShuffleNode::kOp);
  const auto& shuffle = static_cast<const ShuffleNode&>(*a.node());
  EXPECT_EQ(shuffle.buffer_size(), 11);
  EXPECT_EQ(shuffle.seed(), 7u);
  EXPECT_TRUE(shuffle.reshuffle_each_iteration());
  EXPECT_EQ(shuffle.inputs()[0]->op(), TensorSliceNode::kOp);
  Strings first = Collect(a);
  EXPECT_EQ(first, Collect(Dataset::ListFiles({dir_ + "/*"}, true, 7)));
  EXPECT_EQ(first, Collect(a));
  Strings sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Collect(Dataset::ListFiles({dir_ + "/*"}, false)));
  EXPECT_NE(first, sorted);
  // No seed means seed 0 (tpusim choice), still deterministic.
  EXPECT_EQ(Collect(Dataset::ListFiles({dir_ + "/*"})),
            Collect(Dataset::ListFiles({dir_ + "/*"}, true, 0)));
}

TEST_F(GlobTest, ListFilesWithNoMatchIsInvalidArgumentNamingThePatterns) {
  const std::string p1 = dir_ + "/*.none";
  const std::string p2 = dir_ + "/zz*";
  EXPECT_THAT(
      Dataset::ListFiles({p1, p2}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("No files matched pattern: " + p1 + ", " + p2)));
}

TEST(ReadersTest, ListFilesInterleaveTFRecordIsTheCommonMultiFilePattern) {
  const std::string dir = FreshTempDir();
  ASSERT_THAT(WriteTFRecordFile(dir + "/train-0", {"a0", "a1"}), IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/train-1", {"b0", "b1"}), IsOk());
  ASSERT_THAT(WriteTFRecordFile(dir + "/train-2", {"c0"}), IsOk());
  Dataset ds = Dataset::ListFiles({dir + "/train-*"}, false)
                   .Interleave(
                       [](const FunctionArg& f) {
                         return Dataset::TFRecordReader(f.leaf());
                       },
                       /*cycle_length=*/2, /*block_length=*/1);
  EXPECT_THAT(Collect(ds), ElementsAre("a0", "b0", "a1", "b1", "c0"));
  const auto& il = static_cast<const InterleaveNode&>(*ds.node());
  EXPECT_EQ(il.body()->op(), "TFRecordDataset");
  EXPECT_EQ(il.inputs()[0]->op(), "TensorSliceDataset");
  // TFRecordDataset(list_files(...)) is a flat_map over the file names.
  EXPECT_THAT(
      Collect(Dataset::TFRecord(Dataset::ListFiles({dir + "/train-*"}, false))),
      ElementsAre("a0", "a1", "b0", "b1", "c0"));
}

TEST(ReadersTest, FullPipelineIterationIsDeterministic) {
  const std::string dir = FreshTempDir();
  for (int f = 0; f < 4; ++f) {
    std::vector<std::string> recs;
    for (int r = 0; r < 5 + f; ++r) {
      recs.push_back(std::to_string(f) + ":" + std::to_string(r));
    }
    ASSERT_THAT(WriteTFRecordFile(dir + "/part-" + std::to_string(f), recs),
                IsOk());
  }
  auto build = [&]() {
    return Dataset::ListFiles({dir + "/part-*"}, true, 11)
        .Interleave(
            [](const FunctionArg& f) {
              return Dataset::TFRecordReader(f.leaf());
            },
            2, 2)
        .Shuffle(5, 3)
        .Repeat(2)
        .Batch(4);
  };
  Dataset ds = build();
  EXPECT_EQ(ElementSpecToString(ds.element_spec()), "string[?]");
  absl::StatusOr<std::vector<Element>> a = ds.Collect();
  absl::StatusOr<std::vector<Element>> b = build().Collect();
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_EQ(a->size(), 13u);  // 2 * 26 records in batches of 4
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].leaf(), (*b)[i].leaf()) << i;
  }
}

}  // namespace
}  // namespace tpusim::data
