#include "experts/fault_injecting_reader.h"

#include <cstring>
#include <thread>

#include "base/check.h"

namespace strata {

Status MemoryFileReader::read(void* destination, uint64_t offset, size_t length) {
  STRATA_ASSIGN_OR_RETURN(const size_t in_file, bytes_in_file(*this, destination, offset, length));
  if (in_file > 0) std::memcpy(destination, bytes_.data() + offset, in_file);
  std::memset(static_cast<uint8_t*>(destination) + in_file, 0, length - in_file);
  return Status();
}

std::shared_ptr<FaultInjectingReader> FaultInjectingReader::over_bytes(std::string path,
                                                                       std::vector<uint8_t> bytes,
                                                                       size_t alignment) {
  return std::make_shared<FaultInjectingReader>(
      std::make_shared<MemoryFileReader>(std::move(path), std::move(bytes), alignment));
}

FaultInjectingReader::Predicate FaultInjectingReader::overlapping(uint64_t begin, uint64_t end) {
  return [begin, end](uint64_t offset, size_t length) {
    return offset < end && begin < offset + length;
  };
}

size_t FaultInjectingReader::add_rule(Predicate matches, ReadFault fault, int64_t times) {
  std::lock_guard lock(mutex_);
  rules_.push_back({std::move(matches), std::move(fault), times});
  return rules_.size() - 1;
}

void FaultInjectingReader::clear_rules() {
  std::lock_guard lock(mutex_);
  rules_.clear();
}

uint64_t FaultInjectingReader::reads() const {
  std::lock_guard lock(mutex_);
  return log_.size();
}

uint64_t FaultInjectingReader::rule_hits(size_t rule) const {
  std::lock_guard lock(mutex_);
  STRATA_CHECK_LT(rule, rules_.size());
  return rules_[rule].hits;
}

std::vector<FaultInjectingReader::ReadRecord> FaultInjectingReader::read_log() const {
  std::lock_guard lock(mutex_);
  return log_;
}

Status FaultInjectingReader::read(void* destination, uint64_t offset, size_t length) {
  STRATA_ASSIGN_OR_RETURN(const size_t in_file, bytes_in_file(*this, destination, offset, length));
  ReadFault fault;
  {
    std::lock_guard lock(mutex_);
    log_.push_back({offset, length});
    for (Rule& rule : rules_) {
      if (rule.uses_left == 0 || !rule.matches(offset, length)) continue;
      if (rule.uses_left > 0) --rule.uses_left;
      ++rule.hits;
      fault = rule.fault;
      break;
    }
  }
  if (fault.delay.count() > 0) std::this_thread::sleep_for(fault.delay);
  if (fault.hook) fault.hook(offset, length);
  switch (fault.kind) {
    case ReadFault::Kind::kNone:
      return inner_->read(destination, offset, length);
    case ReadFault::Kind::kError:
      return read_error(path(), offset, length, std::strerror(fault.error_number));
    case ReadFault::Kind::kShortRead:
      // Deliver what a real short read would have: the bytes before the point it stopped.
      STRATA_RETURN_IF_ERROR(inner_->read(destination, offset, length));
      return short_read_error(path(), offset, length, std::min(fault.bytes_delivered, in_file),
                              in_file);
  }
  return Status();
}

}  // namespace strata
