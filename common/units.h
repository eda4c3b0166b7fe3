// common/units.h
//
// Strong unit types so that a size or a duration never travels as a bare
// integer:
//
//   Bytes hbm = Bytes::GiB(32);
//   Picoseconds hop = Picoseconds::FromMicroseconds(1);
//   double seconds = (hop * 3).seconds();
//
// Simulated time is integer picoseconds (architecture.md, "Built to be
// partitioned"), so that events order exactly and runs are deterministic.

#ifndef TPUSIM_COMMON_UNITS_H_
#define TPUSIM_COMMON_UNITS_H_

#include <cstdint>
#include <string>

namespace tpusim::common {

// A count of bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t count) : count_(count) {}
  static constexpr Bytes KiB(int64_t n) { return Bytes(n << 10); }
  static constexpr Bytes MiB(int64_t n) { return Bytes(n << 20); }
  static constexpr Bytes GiB(int64_t n) { return Bytes(n << 30); }

  constexpr int64_t count() const { return count_; }
  constexpr double gib() const {
    return static_cast<double>(count_) / (1LL << 30);
  }

  constexpr Bytes operator+(Bytes o) const { return Bytes(count_ + o.count_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(count_ - o.count_); }
  constexpr Bytes operator*(int64_t k) const { return Bytes(count_ * k); }
  Bytes& operator+=(Bytes o) {
    count_ += o.count_;
    return *this;
  }
  constexpr bool operator==(Bytes o) const { return count_ == o.count_; }
  constexpr bool operator!=(Bytes o) const { return count_ != o.count_; }
  constexpr bool operator<(Bytes o) const { return count_ < o.count_; }
  constexpr bool operator<=(Bytes o) const { return count_ <= o.count_; }

  // "32 GiB", "1.5 MiB", "512 B".
  std::string ToString() const;

 private:
  int64_t count_ = 0;
};

// A span of simulated time in integer picoseconds.
class Picoseconds {
 public:
  constexpr Picoseconds() = default;
  constexpr explicit Picoseconds(int64_t count) : count_(count) {}
  static constexpr Picoseconds FromNanoseconds(int64_t n) {
    return Picoseconds(n * 1000);
  }
  static constexpr Picoseconds FromMicroseconds(int64_t n) {
    return Picoseconds(n * 1000 * 1000);
  }

  constexpr int64_t count() const { return count_; }
  constexpr double seconds() const {
    return static_cast<double>(count_) * 1e-12;
  }
  constexpr double microseconds() const {
    return static_cast<double>(count_) * 1e-6;
  }

  constexpr Picoseconds operator+(Picoseconds o) const {
    return Picoseconds(count_ + o.count_);
  }
  constexpr Picoseconds operator-(Picoseconds o) const {
    return Picoseconds(count_ - o.count_);
  }
  constexpr Picoseconds operator*(int64_t k) const {
    return Picoseconds(count_ * k);
  }
  Picoseconds& operator+=(Picoseconds o) {
    count_ += o.count_;
    return *this;
  }
  constexpr bool operator==(Picoseconds o) const { return count_ == o.count_; }
  constexpr bool operator!=(Picoseconds o) const { return count_ != o.count_; }
  constexpr bool operator<(Picoseconds o) const { return count_ < o.count_; }
  constexpr bool operator<=(Picoseconds o) const { return count_ <= o.count_; }

  // "1.500 us", "12 ps", "3.000 ms".
  std::string ToString() const;

 private:
  int64_t count_ = 0;
};

// Bandwidth in bytes per second; time to move `bytes` rounded up to a whole
// picosecond.
class BytesPerSecond {
 public:
  constexpr BytesPerSecond() = default;
  constexpr explicit BytesPerSecond(double rate) : rate_(rate) {}
  static constexpr BytesPerSecond GBps(double gb) {
    return BytesPerSecond(gb * 1e9);
  }
  constexpr double rate() const { return rate_; }
  constexpr double gbps() const { return rate_ * 1e-9; }
  Picoseconds TimeFor(Bytes bytes) const;

 private:
  double rate_ = 0;
};

// Text for people (exact numbers belong in JSON): three significant digits in
// the largest binary unit that keeps the value at least 1, "512 B", "1.50 KiB",
// "12.0 MiB", "120 GiB", "1.25 TiB"; negative counts keep their sign.
std::string HumanBytes(int64_t bytes);

// The same for a duration in seconds: "812 ns", "1.50 µs", "3.20 ms",
// "1.25 s" (three significant digits; microseconds are written "µs").
std::string HumanSeconds(double seconds);

}  // namespace tpusim::common

#endif  // TPUSIM_COMMON_UNITS_H_
