// spiralpir/core/error.hpp — the exception hierarchy of the runtime. Every failure a caller can cause
// (malformed input, wrong parameters, bad arguments) throws a subclass of spiralpir::Error with
// a message that names the object and the violated bound.
#pragma once

#include <stdexcept>
#include <string>

namespace spiralpir {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Serialized input is malformed: bad magic, version, kind, length, or out-of-range content.
class FormatError : public Error {
 public:
  using Error::Error;
};
/// The object was made under other parameters (params hash mismatch).
class ParamsMismatchError : public FormatError {
 public:
  using FormatError::FormatError;
};
/// A caller passed an invalid argument (index out of range, wrong sizes, missing state).
class ArgumentError : public Error {
 public:
  using Error::Error;
};
/// I/O failure (files of the preprocessed database).
class IoError : public Error {
 public:
  using Error::Error;
};

}  // namespace spiralpir
