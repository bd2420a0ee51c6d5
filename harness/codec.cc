#include "harness/codec.h"

#include <sstream>

namespace kbench {
namespace {

std::string KnownCodecList() {
  std::string list;
  for (const CodecInfo& c : CodecTable()) {
    if (!list.empty()) list += ", ";
    list += c.name;
  }
  return list;
}

std::string LevelRangeMessage(const CodecSpec& spec) {
  const LevelRange& range = spec.info().levels;
  std::ostringstream msg;
  msg << "level " << spec.level << " is out of range for " << spec.Name();
  if (range.min == range.max) {
    msg << ": it takes no level";
  } else {
    msg << ": valid levels are " << range.min << " to " << range.max << " (default "
        << range.default_level << ")";
  }
  return msg.str();
}

bool LevelInRange(const CodecSpec& spec) {
  const LevelRange& range = spec.info().levels;
  return spec.level == 0 || (spec.level >= range.min && spec.level <= range.max);
}

}  // namespace

std::optional<CodecSpec> CodecSpecForKafkaAttribute(unsigned attribute) {
  const auto table = CodecTable();
  for (std::size_t row = 0; row < table.size(); ++row) {
    if (table[row].kafka_attribute == attribute) {
      CodecSpec spec;
      spec.row = static_cast<std::uint8_t>(row);
      return spec;
    }
  }
  return std::nullopt;
}

std::vector<CodecSpec> KafkaCodecs() {
  std::vector<CodecSpec> specs;
  const auto table = CodecTable();
  for (std::size_t row = 0; row < table.size(); ++row) {
    const auto attribute = table[row].kafka_attribute;
    if (!attribute) continue;
    std::optional<CodecSpec> first = CodecSpecForKafkaAttribute(*attribute);
    if (first && first->row == row) specs.push_back(*first);
  }
  return specs;
}

Status LibrdkafkaCanWrite(const CodecSpec& c) {
  const CodecInfo& info = c.info();
  if (info.librdkafka_name.empty()) return Status::Error("librdkafka cannot write " + c.Name());
  const LevelRange& range = info.librdkafka_levels;
  if (c.level != 0 && (c.level < range.min || c.level > range.max)) {
    return Status::Error("librdkafka's compression.level for " + c.Name() +
                         (range.min == range.max ? " takes no level"
                                                 : " takes " + std::to_string(range.min) + ".." +
                                                       std::to_string(range.max)));
  }
  return Status::Ok();
}

const CodecInfo* CodecForLibrdkafkaName(std::string_view name) {
  for (const CodecInfo& c : CodecTable()) {
    if (!c.librdkafka_name.empty() && c.librdkafka_name == name) return &c;
  }
  return nullptr;
}

const std::vector<std::string_view>& KnownCodecNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (const CodecInfo& c : CodecTable()) v.push_back(c.name);
    return v;
  }();
  return names;
}

std::string CodecHelp() {
  std::ostringstream out;
  const char* sep = "";
  for (const CodecInfo& c : CodecTable()) {
    out << sep << c.name;
    if (c.levels.min != c.levels.max) out << " " << c.levels.min << ".." << c.levels.max;
    sep = ", ";
  }
  return out.str();
}

std::unique_ptr<Codec> MakeCodec(const CodecSpec& spec) {
  if (spec.row >= CodecTable().size()) {
    throw UsageError("unknown codec row " + std::to_string(spec.row));
  }
  if (!LevelInRange(spec)) throw UsageError(LevelRangeMessage(spec));
  return spec.info().make(spec);
}

CodecSpec ParseCodecSpec(std::string_view text) {
  std::string_view name = text;
  std::string_view level_text;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    level_text = text.substr(colon + 1);
  }
  CodecSpec spec;
  const auto table = CodecTable();
  std::size_t row = 0;
  while (row < table.size() && table[row].name != name) ++row;
  if (row == table.size()) {
    throw UsageError("unknown codec '" + std::string(name) + "': valid codecs are " +
                     KnownCodecList() + " (optionally with :LEVEL, e.g. zstd:3)");
  }
  spec.row = static_cast<std::uint8_t>(row);
  if (!level_text.empty()) {
    std::size_t used = 0;
    int level = 0;
    try {
      level = std::stoi(std::string(level_text), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != level_text.size()) {
      throw UsageError("codec level '" + std::string(level_text) + "' is not an integer");
    }
    spec.level = level;
    if (!LevelInRange(spec)) throw UsageError(LevelRangeMessage(spec));
  }
  return spec;
}

std::vector<std::pair<std::string, std::string>> CodecLibraryVersions() {
  std::vector<std::pair<std::string, std::string>> versions;
  for (const CodecInfo& c : CodecTable()) {
    if (!c.version_key.empty()) versions.emplace_back(c.version_key, c.version());
  }
  return versions;
}

}  // namespace kbench
