// common/status_macros.h
//
// Status propagation macros. Debian's Abseil (20220623) ships none, so tpusim
// defines its own:
//
//   absl::StatusOr<Report> Run(const Scenario& s) {
//     TPUSIM_RETURN_IF_ERROR(Validate(s));
//     TPUSIM_ASSIGN_OR_RETURN(Program program, Trace(s));
//     return Execute(program);
//   }
//
// Both macros evaluate their argument exactly once and return the error status
// unchanged.

#ifndef TPUSIM_COMMON_STATUS_MACROS_H_
#define TPUSIM_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define TPUSIM_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status tpusim_status_ = (expr);          \
    if (!tpusim_status_.ok()) return tpusim_status_; \
  } while (false)

#define TPUSIM_STATUS_CONCAT_INNER_(a, b) a##b
#define TPUSIM_STATUS_CONCAT_(a, b) TPUSIM_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into `lhs`, which may be a declaration (`Tensor t`)
// or an existing lvalue.
#define TPUSIM_ASSIGN_OR_RETURN(lhs, rexpr) \
  TPUSIM_ASSIGN_OR_RETURN_IMPL_(            \
      TPUSIM_STATUS_CONCAT_(tpusim_statusor_, __LINE__), lhs, rexpr)

#define TPUSIM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // TPUSIM_COMMON_STATUS_MACROS_H_
