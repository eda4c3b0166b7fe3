// tools/inspect_input_report.h
//
// The outputs of `tpusim inspect-input`: the JSON document (fixed schema,
// byte-stable), the text listing for people, and the line diff shown when a
// golden file differs.
//
//   std::string json = FormatListingJson(listing);
//   std::string diff = GoldenDiff(golden_text, json, "tests/golden/x.json");
//   if (!diff.empty()) ...  // the first differing lines, with context
//
// JSON schema (keys sorted, one replica per line, two-space indentation,
// trailing newline; number and string formats as in tools/json_writer.h):
//   {
//     "end": {"at_step": K, "code": "OUT_OF_RANGE", "message": "..."},
//     "replica_workers": [worker of replica 0, ...],
//     "replicas": N,
//     "semantics": "2.2",
//     "steps": [
//       {"replicas": [
//         {"components": [{"dtype": "int64", "path": "0", "shape": [2],
//                          "values": [0, 1]}], "replica": 0, "worker": 0},
//         ...                                   (one line per replica)
//       ], "step": 0},
//       ...
//     ],
//     "warnings": ["..."],
//     "workers": W
//   }
// * end.code: absl's canonical code name. "OUT_OF_RANGE" = the end of the
//   data; another error code = the error that ended the listing (nothing is
//   listed past it); "OK" = the step limit stopped the listing, message
//   "stopped after K steps". end.at_step = the number of steps listed. In
//   end.message and warnings the synthetic data directory reads "<data-dir>".
// * components: the leaves of the replica's element in tf.nest order; path
//   "0" for a single tensor, "0", "1", ... for a tuple, dict keys joined with
//   '/' for nested dicts ("features/x"). values are flattened row-major; an
//   empty batch has shape [0, ...] and values []; a tensor without data
//   (abstract) has "values": null.
// * a sparse component (ReplicaInput::sparse): {"dtype": values' dtype,
//   "indices": [[i0, i1, ...], ...] (one per value, row-major order), "path",
//   "shape": the dense_shape, "sparse": true, "values": [...]}; dense
//   components have no "sparse" key.
// * explain (only with RunInputOptions::explain): {"workers": [{"after":
//   [graph lines], "before": [graph lines], "rebatch": {"case", "detail"},
//   "shard": {"applied", "reason", "requested"}, "worker": i}, ...]}, one
//   worker per line (data::WorkerExplanation).

#ifndef TPUSIM_TOOLS_INSPECT_INPUT_REPORT_H_
#define TPUSIM_TOOLS_INSPECT_INPUT_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "scenarios/input_runner.h"
#include "strategy/runtime/tensor.h"
#include "tools/json_writer.h"

namespace tpusim::tools {

// The listing as a JSON value (sorted keys).
Json ListingToJson(const scenarios::InputListing& listing);
// The JSON document with the layout described above.
std::string FormatListingJson(const scenarios::InputListing& listing);
// The text listing:
//   step 0
//     replica 0 (worker 0): [0, 1]
//     replica 1 (worker 0): features/x=[1, 2]; label=0
//   end at step 2: OUT_OF_RANGE: End of sequence ...
//   warning: ...
std::string FormatListingText(const scenarios::InputListing& listing);
// The three parts of the text listing, for printing it step by step: the
// header lines, one step's lines, and the end line with the warnings.
std::string FormatListingHeaderText(const scenarios::InputListing& listing);
// The `explain worker i` blocks of --explain (part of the header text; "" when
// the listing has no explanations).
std::string FormatExplainText(const scenarios::InputListing& listing);
std::string FormatStepText(const scenarios::InputStep& step);
std::string FormatListingEndText(const scenarios::InputListing& listing);

// tpusim choice: the JSON listing (which is written only when complete, since
// its keys are sorted and "end" comes before "steps") holds at most this many
// values: one per component of every replica's element plus one per tensor
// value (1,048,576: a run at the cap peaked at 330 MB; 4 M values
// measured 1.2 GB).
inline constexpr int64_t kMaxJsonListingValues = int64_t{1} << 20;

// Collects the steps of a run for the JSON document (and the golden
// comparison), refusing with ResourceExhausted, naming --steps, a step that
// would take the listing past `max_values`.
class JsonListingCollector final : public scenarios::ListingSink {
 public:
  explicit JsonListingCollector(int64_t max_values = kMaxJsonListingValues)
      : max_values_(max_values) {}
  absl::Status Begin(const scenarios::InputListing& header) override;
  absl::Status Step(const scenarios::InputStep& step) override;
  // `result` (RunInputScenario's listing) with the collected steps.
  scenarios::InputListing Finish(const scenarios::InputListing& result);

 private:
  int64_t max_values_;
  int64_t values_ = 0;
  scenarios::InputListing listing_;
};
// A tensor's values with nested brackets ("[[0, 1], [2, 3]]", "7", "[]",
// "\"ab\"").
std::string FormatTensorValues(const runtime::Tensor& tensor);

// "" when `expected` == `actual`; otherwise a readable diff of the first
// differing region: a header naming the first differing line and both sides, up
// to 3 lines of context before, the differing expected lines ("-") and actual
// lines ("+"), at most 12 of each, and up to 3 lines of context after.
std::string GoldenDiff(absl::string_view expected, absl::string_view actual,
                       absl::string_view expected_name);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_INSPECT_INPUT_REPORT_H_
