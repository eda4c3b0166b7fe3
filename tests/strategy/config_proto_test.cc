#include "strategy/config_proto.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/cluster_resolver.h"
#include "strategy/config.pb.h"

namespace tpusim::strategy {
namespace {

using ::tpusim::testing::IsOk;

TPUClusterResolver Resolver(const char* name) {
  absl::StatusOr<TPUClusterResolver> r = TPUClusterResolver::Create(name);
  EXPECT_THAT(r, IsOk());
  return *r;
}

// ConfigProto.cluster_def (field 14) for job "worker" with task 0 =
// "tpu-worker-0:8470".
std::string WorkerClusterDefField() {
  const std::string entry = std::string("\x08\x00", 2) +  // key = 0
                            "\x12\x11tpu-worker-0:8470";  // value, 17 bytes
  const std::string job =
      std::string("\x0a\x06worker") +  // name
      "\x12" + std::string(1, static_cast<char>(entry.size())) + entry;
  const std::string cluster =
      "\x0a" + std::string(1, static_cast<char>(job.size())) + job;
  return "\x72" + std::string(1, static_cast<char>(cluster.size())) + cluster;
}

TEST(ConfigProtoTest, SetsIsolateSessionStateAndTheResolverClusterDef) {
  const tensorflow::ConfigProto updated =
      UpdateConfigProto(tensorflow::ConfigProto(), Resolver("v3-32"));
  EXPECT_TRUE(updated.isolate_session_state());
  ASSERT_EQ(updated.cluster_def().job_size(), 1);
  const tensorflow::JobDef& job = updated.cluster_def().job(0);
  EXPECT_EQ(job.name(), "worker");
  ASSERT_EQ(job.tasks_size(), 4);
  EXPECT_EQ(job.tasks().at(0), "tpu-worker-0:8470");
  EXPECT_EQ(job.tasks().at(3), "tpu-worker-3:8470");
}

TEST(ConfigProtoTest, ExactBytesForASingleHost) {
  const tensorflow::ConfigProto updated =
      UpdateConfigProto(tensorflow::ConfigProto(), Resolver("v3-8"));
  EXPECT_EQ(updated.SerializeAsString(), WorkerClusterDefField() + "\x78\x01");
}

TEST(ConfigProtoTest, ReplacesAnExistingClusterDefAndLeavesTheInputUnchanged) {
  tensorflow::ConfigProto config;
  tensorflow::JobDef* other = config.mutable_cluster_def()->add_job();
  other->set_name("ps");
  (*other->mutable_tasks())[0] = "ps-0:2222";
  const std::string before = config.SerializeAsString();

  const tensorflow::ConfigProto updated =
      UpdateConfigProto(config, Resolver("v3-8"));
  ASSERT_EQ(updated.cluster_def().job_size(), 1);
  EXPECT_EQ(updated.cluster_def().job(0).name(), "worker");
  EXPECT_TRUE(updated.isolate_session_state());
  EXPECT_EQ(config.SerializeAsString(), before);
  EXPECT_FALSE(config.isolate_session_state());
  EXPECT_EQ(config.cluster_def().job(0).name(), "ps");
}

TEST(ConfigProtoTest, EmptyClusterSpecKeepsTheClusterDef) {
  tensorflow::ConfigProto config;
  config.mutable_cluster_def()->add_job()->set_name("ps");
  const tensorflow::ConfigProto updated =
      UpdateConfigProto(config, Resolver("local"));
  EXPECT_TRUE(updated.isolate_session_state());
  ASSERT_EQ(updated.cluster_def().job_size(), 1);
  EXPECT_EQ(updated.cluster_def().job(0).name(), "ps");
}

TEST(ConfigProtoTest, UnknownFieldsSurviveTheRoundTrip) {
  // device_count = 1: {"CPU": 4}; allow_soft_placement = 7: true. Neither is
  // declared in tpusim's ConfigProto.
  const std::string device_count(
      "\x0a\x07\x0a\x03"
      "CPU"
      "\x10\x04",
      9);
  const std::string allow_soft_placement("\x38\x01", 2);
  tensorflow::ConfigProto config;
  ASSERT_TRUE(config.ParseFromString(device_count + allow_soft_placement));
  EXPECT_EQ(config.SerializeAsString(), device_count + allow_soft_placement);

  const tensorflow::ConfigProto updated =
      UpdateConfigProto(config, Resolver("v3-8"));
  // Known fields in field order, then the unknown fields as they were read.
  EXPECT_EQ(updated.SerializeAsString(), WorkerClusterDefField() + "\x78\x01" +
                                             device_count +
                                             allow_soft_placement);
  EXPECT_EQ(config.SerializeAsString(), device_count + allow_soft_placement);
}

TEST(ConfigProtoTest, ClusterSpecToClusterDefOrdersJobsByName) {
  const tensorflow::ClusterDef def = ClusterSpecToClusterDef(
      ClusterSpec{{"worker", {"w0:1", "w1:1"}}, {"chief", {"c0:1"}}});
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(0).name(), "chief");
  EXPECT_EQ(def.job(0).tasks().at(0), "c0:1");
  EXPECT_EQ(def.job(1).name(), "worker");
  ASSERT_EQ(def.job(1).tasks_size(), 2);
  EXPECT_EQ(def.job(1).tasks().at(1), "w1:1");
  EXPECT_EQ(ClusterSpecToClusterDef(ClusterSpec{}).job_size(), 0);
}

}  // namespace
}  // namespace tpusim::strategy
