#include "experts/lab/expert_trace.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "base/check.h"
#include "base/whole_file.h"

namespace strata {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'T', 'R', 'A', 'C', 'E'};
constexpr uint32_t kVersion = 2;
constexpr uint32_t kTeacherForced = 1;
constexpr uint32_t kPredictions = 2;
constexpr size_t kHeaderBytes = 48;
constexpr uint32_t kMaxLayers = 4096;
constexpr uint32_t kMaxExperts = 65536;  // ids are uint16
constexpr uint32_t kMaxNoteBytes = 65536;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

Status validate_shape(const ExpertTrace& t, std::string_view name) {
  if (t.n_layer < 1 || t.n_layer > kMaxLayers)
    return Status::errorf("{}: n_layer {} is outside 1..{}", name, t.n_layer, kMaxLayers);
  if (t.n_expert < 1 || t.n_expert > kMaxExperts)
    return Status::errorf("{}: n_expert {} is outside 1..{}", name, t.n_expert, kMaxExperts);
  if (t.n_expert_used < 1 || t.n_expert_used > t.n_expert)
    return Status::errorf("{}: {} experts per token is outside 1..n_expert ({})", name,
                          t.n_expert_used, t.n_expert);
  if (t.note.size() > kMaxNoteBytes)
    return Status::errorf("{}: note of {} bytes exceeds {}", name, t.note.size(), kMaxNoteBytes);
  return Status();
}

// Checks `ids`, lists of k experts for layers first_layer..n_layer-1 of every token: each below
// n_expert and distinct within its list. `what` names the lists in messages.
Status validate_lists(const ExpertTrace& t, std::span<const uint16_t> ids, uint32_t first_layer,
                      std::string_view what, std::string_view name) {
  const uint32_t layers = t.n_layer - first_layer;
  std::vector<uint64_t> last_seen(t.n_expert, UINT64_MAX);  // index of the list of last use
  for (uint64_t list = 0; list < ids.size() / t.n_expert_used; ++list) {
    const uint64_t token = list / layers;
    const uint32_t layer = first_layer + uint32_t(list % layers);
    for (uint16_t expert : ids.subspan(list * t.n_expert_used, t.n_expert_used)) {
      if (expert >= t.n_expert)
        return Status::errorf("{}: token {} layer {}{}: expert {} is not below n_expert {}", name,
                              token, layer, what, expert, t.n_expert);
      if (last_seen[expert] == list)
        return Status::errorf("{}: token {} layer {}{}: expert {} is listed twice", name, token,
                              layer, what, expert);
      last_seen[expert] = list;
    }
  }
  return Status();
}

}  // namespace

Status validate_expert_trace(const ExpertTrace& t, std::string_view name) {
  STRATA_RETURN_IF_ERROR(validate_shape(t, name));
  const uint64_t per_token = uint64_t(t.n_layer) * t.n_expert_used;
  if (t.experts.size() % per_token != 0)
    return Status::errorf("{}: {} expert ids are not a whole number of tokens of {}", name,
                          t.experts.size(), per_token);
  if (t.n_prompt_tokens > t.n_tokens())
    return Status::errorf("{}: {} prompt tokens but only {} tokens", name, t.n_prompt_tokens,
                          t.n_tokens());
  const uint64_t predictions = t.has_predictions ? t.n_tokens() * (per_token - t.n_expert_used) : 0;
  if (t.predictions.size() != predictions)
    return Status::errorf("{}: {} predicted ids for {} tokens; expected {}", name,
                          t.predictions.size(), t.n_tokens(), predictions);
  STRATA_RETURN_IF_ERROR(validate_lists(t, t.experts, 0, "", name));
  return validate_lists(t, t.predictions, 1, " (prediction)", name);
}

std::vector<uint8_t> encode_expert_trace(const ExpertTrace& t) {
  const Status valid = validate_expert_trace(t, "trace");
  STRATA_CHECK(valid.ok());
  std::vector<uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  out.reserve(kHeaderBytes + t.note.size() + 2 * (t.experts.size() + t.predictions.size()));
  put_u32(out, kVersion);
  put_u32(out, (t.teacher_forced ? kTeacherForced : 0) | (t.has_predictions ? kPredictions : 0));
  put_u32(out, t.n_layer);
  put_u32(out, t.n_expert);
  put_u32(out, t.n_expert_used);
  put_u32(out, uint32_t(t.note.size()));
  put_u64(out, t.n_tokens());
  put_u64(out, t.n_prompt_tokens);
  out.insert(out.end(), t.note.begin(), t.note.end());
  for (const auto* ids : {&t.experts, &t.predictions}) {
    for (uint16_t id : *ids) {
      out.push_back(uint8_t(id));
      out.push_back(uint8_t(id >> 8));
    }
  }
  return out;
}

Result<ExpertTrace> decode_expert_trace(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < kHeaderBytes)
    return Status::errorf("{}: {} bytes, too short for an expert trace header ({} bytes)", name,
                          bytes.size(), kHeaderBytes);
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return Status::errorf("{}: not an expert trace (no STRTRACE magic)", name);
  const uint8_t* h = bytes.data();
  const uint32_t version = uint32_t(get_le(h + 8, 4));
  if (version != 1 && version != kVersion)
    return Status::errorf("{}: expert trace version {}; this build reads versions 1..{}", name,
                          version, kVersion);
  const uint32_t flags = uint32_t(get_le(h + 12, 4));
  const uint32_t known = version == 1 ? kTeacherForced : kTeacherForced | kPredictions;
  if (flags & ~known) return Status::errorf("{}: unknown flags {:#x}", name, flags);
  ExpertTrace t;
  t.teacher_forced = flags & kTeacherForced;
  t.has_predictions = flags & kPredictions;
  t.n_layer = uint32_t(get_le(h + 16, 4));
  t.n_expert = uint32_t(get_le(h + 20, 4));
  t.n_expert_used = uint32_t(get_le(h + 24, 4));
  const uint64_t note_bytes = get_le(h + 28, 4);
  const uint64_t n_tokens = get_le(h + 32, 8);
  t.n_prompt_tokens = get_le(h + 40, 8);
  if (note_bytes > kMaxNoteBytes)
    return Status::errorf("{}: note of {} bytes exceeds {}", name, note_bytes, kMaxNoteBytes);
  STRATA_RETURN_IF_ERROR(validate_shape(t, name));
  // Compared by division first: a huge n_tokens must not overflow the size computation.
  const uint64_t routed_per_token = uint64_t(t.n_layer) * t.n_expert_used;
  const uint64_t per_token =
      routed_per_token + (t.has_predictions ? routed_per_token - t.n_expert_used : 0);
  const uint64_t payload = bytes.size() - kHeaderBytes;
  if (n_tokens > payload / (2 * per_token))
    return Status::errorf("{}: the header claims {} tokens, more than its {} bytes can hold", name,
                          n_tokens, bytes.size());
  const uint64_t expected = note_bytes + 2 * per_token * n_tokens;
  if (payload != expected)
    return Status::errorf(
        "{}: {} bytes after the header, but a note of {} bytes and {} tokens of "
        "{} uint16 ids make {}",
        name, payload, note_bytes, n_tokens, per_token, expected);
  t.note.assign(reinterpret_cast<const char*>(h + kHeaderBytes), size_t(note_bytes));
  const uint8_t* ids = h + kHeaderBytes + note_bytes;
  t.experts.resize(size_t(routed_per_token * n_tokens));
  t.predictions.resize(size_t((per_token - routed_per_token) * n_tokens));
  for (size_t i = 0; i < t.experts.size(); ++i) t.experts[i] = uint16_t(get_le(ids + 2 * i, 2));
  ids += 2 * t.experts.size();
  for (size_t i = 0; i < t.predictions.size(); ++i)
    t.predictions[i] = uint16_t(get_le(ids + 2 * i, 2));
  STRATA_RETURN_IF_ERROR(validate_expert_trace(t, name));
  return t;
}

Result<ExpertTrace> read_expert_trace(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path));
  return decode_expert_trace({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path);
}

ExpertTraceRecorder::ExpertTraceRecorder(uint32_t n_layer, uint32_t n_expert,
                                         uint32_t n_expert_used) {
  trace_.n_layer = n_layer;
  trace_.n_expert = n_expert;
  trace_.n_expert_used = n_expert_used;
  error_ = validate_shape(trace_, "routing");
}

void ExpertTraceRecorder::store(const char* what, int layer, int first_layer, int64_t position,
                                std::span<const int32_t> experts, std::vector<uint16_t>& ids,
                                std::vector<uint8_t>& seen) {
  if (!error_.ok()) return;
  const uint32_t k = trace_.n_expert_used;
  const uint32_t layers = trace_.n_layer - uint32_t(first_layer);
  if (layer < first_layer || uint32_t(layer) >= trace_.n_layer || position < 0 ||
      experts.size() != k) {
    error_ = Status::errorf("routing: bad {} report (layer {}, position {}, {} experts)", what,
                            layer, position, experts.size());
    return;
  }
  const uint64_t slot = uint64_t(position) * layers + uint32_t(layer - first_layer);
  if (slot >= seen.size()) {
    seen.resize(size_t(slot / layers + 1) * layers, 0);
    ids.resize(seen.size() * k);
  }
  if (seen[slot]) {
    error_ = Status::errorf("routing: {} for position {} layer {} reported twice", what, position,
                            layer);
    return;
  }
  seen[slot] = 1;
  for (uint32_t i = 0; i < k; ++i) {
    if (experts[i] < 0 || uint32_t(experts[i]) >= trace_.n_expert) {
      error_ = Status::errorf("routing: {} for position {} layer {}: expert {} out of range", what,
                              position, layer, experts[i]);
      return;
    }
    ids[slot * k + i] = uint16_t(experts[i]);
  }
}

void ExpertTraceRecorder::record(int layer, int64_t position, std::span<const int32_t> experts) {
  store("route", layer, 0, position, experts, trace_.experts, seen_);
}

void ExpertTraceRecorder::record_prediction(int layer, int64_t position,
                                            std::span<const int32_t> experts) {
  trace_.has_predictions = true;
  store("prediction", layer, 1, position, experts, trace_.predictions, seen_prediction_);
}

Result<ExpertTrace> ExpertTraceRecorder::finish(uint64_t n_prompt_tokens, bool teacher_forced,
                                                std::string note) {
  if (!error_.ok()) return error_;
  const auto missing = std::find(seen_.begin(), seen_.end(), 0);
  if (missing != seen_.end()) {
    const size_t slot = size_t(missing - seen_.begin());
    return Status::errorf("routing: position {} layer {} was never reported", slot / trace_.n_layer,
                          slot % trace_.n_layer);
  }
  if (trace_.has_predictions) {
    // Every routed token of every layer after the first has its prediction, and no other.
    const uint32_t layers = trace_.n_layer - 1;
    const size_t expected = size_t(trace_.n_tokens() * layers);
    if (seen_prediction_.size() > expected)
      return Status::errorf("routing: a prediction for position {}, which was never routed",
                            expected / layers);
    seen_prediction_.resize(expected, 0);
    trace_.predictions.resize(expected * trace_.n_expert_used);
    const auto gap = std::find(seen_prediction_.begin(), seen_prediction_.end(), 0);
    if (gap != seen_prediction_.end()) {
      const size_t slot = size_t(gap - seen_prediction_.begin());
      return Status::errorf("routing: no prediction for position {} layer {}", slot / layers,
                            1 + slot % layers);
    }
  }
  trace_.n_prompt_tokens = n_prompt_tokens;
  trace_.teacher_forced = teacher_forced;
  trace_.note = std::move(note);
  STRATA_RETURN_IF_ERROR(validate_expert_trace(trace_, "routing"));
  return std::move(trace_);
}

}  // namespace strata
