#pragma once

#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace kbench {

// Outcome of an operation that can fail on bad input. Exceptions are kept out of the
// hot paths the benchmarks time; a Status is cheap to return when it is ok.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return {}; }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

// A value or the Status saying why there is none: what a fallible function returns
// instead of a null pointer plus a std::string* out-parameter, and what a factory returns
// where a constructor would have had to throw.
//
//   StatusOr<std::unique_ptr<Admin>> admin = AdminClient::Create(settings);
//   if (!admin.ok()) return admin.status();
//   Use(**admin);
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status::Error("StatusOr made from an ok Status without a value");
  }

  bool ok() const { return status_.ok(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  const std::string& message() const { return status_.message(); }

  // Only when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

// Thrown only while parsing user input (command line, config), never while timing.
class UsageError : public std::exception {
 public:
  explicit UsageError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace kbench
