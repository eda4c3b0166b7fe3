// --set PATH=VALUE on scenarios: every field type, lists, indices, oneofs,
// whole messages, and the errors naming what is allowed.

#include "scenarios/field_override.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "scenarios/scenario.pb.h"
#include "scenarios/scenario_loader.h"

namespace tpusim::scenarios {
namespace {

using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

Scenario Parse(const std::string& text) {
  Scenario s;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &s));
  return s;
}

constexpr char kBase[] = R"pb(
  name: "base"
  cluster { workers: 2 replicas_per_worker: 2 }
  global_batch_size: 8
  pipeline { range { stop: 32 } }
  pipeline { batch { batch_size: 8 } }
  pipeline { shuffle { buffer_size: 4 seed: 7 } }
)pb";

TEST(FieldOverrideTest, SetsScalarsEnumsAndNestedFields) {
  Scenario s = Parse(kBase);
  ASSERT_THAT(ApplyFieldOverride(&s, "global_batch_size=64"), IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "name=\"renamed\""), IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "semantics=2.4"), IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "shard_policy=DATA"), IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "cluster.slice=v4-32"), IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "pipeline[1].batch.drop_remainder=true"),
              IsOk());
  ASSERT_THAT(ApplyFieldOverride(&s, "pipeline[2].shuffle.seed=18446744073709551615"),
              IsOk());
  EXPECT_EQ(s.global_batch_size(), 64);
  EXPECT_EQ(s.name(), "renamed");
  EXPECT_EQ(s.semantics(), "2.4");
  EXPECT_EQ(s.shard_policy(), Scenario::DATA);
  EXPECT_EQ(s.cluster().slice(), "v4-32");
  EXPECT_EQ(s.cluster().workers(), 2);  // the rest of the message stays
  EXPECT_TRUE(s.pipeline(1).batch().drop_remainder());
  EXPECT_EQ(s.pipeline(2).shuffle().seed(), 18446744073709551615ull);
}

TEST(FieldOverrideTest, WholeMessagesListsAndOneofs) {
  Scenario s = Parse(kBase);
  ASSERT_THAT(ApplyFieldOverride(&s, "cluster={slice: \"v3-8\"}"), IsOk());
  EXPECT_EQ(s.cluster().slice(), "v3-8");
  EXPECT_FALSE(s.cluster().has_workers());  // replaced, not merged
  // A oneof member replaces the stage's other kind.
  ASSERT_THAT(ApplyFieldOverride(&s, "pipeline[2]={take {count: 3}}"), IsOk());
  EXPECT_EQ(s.pipeline(2).kind_case(), Stage::kTake);
  EXPECT_EQ(s.pipeline(2).take().count(), 3);
  ASSERT_THAT(ApplyFieldOverride(&s, "pipeline[2].skip.count=1"), IsOk());
  EXPECT_EQ(s.pipeline(2).kind_case(), Stage::kSkip);
  Scenario t = Parse(R"pb(pipeline { from_tensor_slices {
                            component { dtype: "int64" shape: 2 int_values: [ 1, 2 ] }
                          } })pb");
  ASSERT_THAT(ApplyFieldOverride(
                  &t, "pipeline[0].from_tensor_slices.component[0].int_values=[5, 6,7]"),
              IsOk());
  EXPECT_THAT(t.pipeline(0).from_tensor_slices().component(0).int_values(),
              ::testing::ElementsAre(5, 6, 7));
  ASSERT_THAT(ApplyFieldOverride(
                  &t, "pipeline[0].from_tensor_slices.component[0].shape=3"),
              IsOk());
  EXPECT_THAT(t.pipeline(0).from_tensor_slices().component(0).shape(),
              ::testing::ElementsAre(3));
}

TEST(FieldOverrideTest, ErrorsNameTheAssignmentAndWhatIsAllowed) {
  struct Case {
    std::string assignment;
    std::string message;
  };
  const Case cases[] = {
      {"global_batch_size", "--set global_batch_size: want PATH=VALUE"},
      {"=3", "--set =3: want PATH=VALUE"},
      {"global_batch=3",
       "--set global_batch=3: Scenario has no field 'global_batch'; fields: "
       "name, cluster, pipeline, global_batch_size, shard_policy, semantics, "
       "api, file_set"},
      {"global_batch_size=ten",
       "--set global_batch_size=ten: 'global_batch_size' takes an integer from "
       "-9223372036854775808 to 9223372036854775807, not 'ten'"},
      {"cluster.workers=3000000000",
       "'workers' takes an integer from -2147483648 to 2147483647, not "
       "'3000000000'"},
      {"shard_policy=FILES",
       "'shard_policy' takes one of AUTO, FILE, DATA, OFF, not 'FILES'; did "
       "you mean \"FILE\"?"},
      {"pipeline[1].batch.drop_remainder=yes",
       "'drop_remainder' takes true or false, not 'yes'"},
      {"pipeline[3].batch.batch_size=2",
       "pipeline[3] does not exist: the scenario has 3 entries"},
      {"pipeline.batch.batch_size=2",
       "'pipeline' is a list of messages; name one: pipeline[N]"},
      {"pipeline[x].batch.batch_size=2",
       "'pipeline[x]': an index is written name[N], N >= 0"},
      {"cluster[0].slice=v3-8", "'cluster' is not a list; drop the index"},
      {"global_batch_size.x=1", "'global_batch_size' is a int64, not a message"},
      {"cluster={slice: 3 4}",
       "not a Cluster in text format (write {field: value ...}): column 8: "
       "Expected string, got: 3"},
      {"pipeline[1].batch.batch_sizee=2",
       "BatchStage has no field 'batch_sizee'; did you mean \"batch_size\"?; "
       "fields: batch_size, "
       "use_global_batch, drop_remainder"},
  };
  for (const Case& c : cases) {
    Scenario s = Parse(kBase);
    EXPECT_THAT(ApplyFieldOverride(&s, c.assignment),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::HasSubstr(c.message)))
        << c.assignment;
  }
}

// The loader applies overrides before validating: the validator judges the
// overridden scenario.
TEST(FieldOverrideTest, LoaderValidatesTheOverriddenScenario) {
  absl::StatusOr<LoadedScenario> ok =
      ParseScenario(kBase, "base.textproto", "",
                    {"global_batch_size=16", "pipeline[1].batch.batch_size=16"});
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->proto.global_batch_size(), 16);
  // One alone contradicts the other, and the validator says so.
  EXPECT_THAT(ParseScenario(kBase, "base.textproto", "",
                            {"global_batch_size=16"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("contradicts global_batch_size=16")));
  EXPECT_THAT(ParseScenario(kBase, "base.textproto", "",
                            {"pipeline[1].batch.batch_size=0"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr(
                           "pipeline[1].batch.batch_size=0: must be >= 1")));
  EXPECT_THAT(ParseScenario(kBase, "base.textproto", "", {"nope=1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("--set nope=1: Scenario has no "
                                            "field 'nope'")));
}

}  // namespace
}  // namespace tpusim::scenarios
