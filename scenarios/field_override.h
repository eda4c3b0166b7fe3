// scenarios/field_override.h
//
// `--set PATH=VALUE` for any protobuf message (scenarios, and the run options
// that extend them): the command line changes one field of a loaded text proto
// without editing the file, and `tpusim sweep` varies one per point.
//
//   TPUSIM_RETURN_IF_ERROR(ApplyFieldOverride(&scenario, "global_batch_size=64"));
//   ApplyFieldOverride(&scenario, "pipeline[1].batch.drop_remainder=true");
//   ApplyFieldOverride(&scenario, "cluster={slice: \"v4-32\"}");
//
// PATH is field names joined by '.', as the validator names fields; a repeated
// message field takes an index ("pipeline[2]"). VALUE is parsed by the field's
// type: integers (range-checked), floating point, true/false, strings (quotes
// optional), enum value names, a whole message in text format ("{a: 1}"), or
// for a repeated scalar field a list "[1,2,3]" (a single value is a list of
// one). Setting a field of a oneof clears the oneof's other fields, as in
// protobuf. Every error is InvalidArgument "--set PATH=VALUE: problem" naming
// what is allowed (the message's field names, the enum's values, the index
// range).

#ifndef TPUSIM_SCENARIOS_FIELD_OVERRIDE_H_
#define TPUSIM_SCENARIOS_FIELD_OVERRIDE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace tpusim::scenarios {

absl::Status ApplyFieldOverride(google::protobuf::Message* message,
                                absl::string_view assignment);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_FIELD_OVERRIDE_H_
