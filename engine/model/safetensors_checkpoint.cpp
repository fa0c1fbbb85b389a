#include "engine/model/safetensors_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "engine/model/json_object_reader.h"
#include "engine/model/printable.h"

namespace tern::engine {
namespace {

// A shard name from an index file must stay inside the model directory.
bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

}  // namespace

Expected<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& directory) {
  const std::filesystem::path dir(directory);
  const std::string index_path = (dir / "model.safetensors.index.json").string();
  const std::string single_path = (dir / "model.safetensors").string();
  std::error_code ignored;
  SafetensorsCheckpoint checkpoint;

  if (!std::filesystem::exists(index_path, ignored)) {
    if (!std::filesystem::exists(single_path, ignored)) {
      return Error{directory + ": no model.safetensors or model.safetensors.index.json"};
    }
    Expected<SafetensorsFile> file = SafetensorsFile::open(single_path);
    if (!file) return file.error();
    checkpoint.files_.push_back(std::move(file).value());
    if (Status status = checkpoint.index_file(0); !status) return Error{status.message()};
    return checkpoint;
  }

  JsonDocument index;
  if (Status status = parse_json_file(index_path, index); !status) return Error{status.message()};
  JsonObjectReader reader(index.root, index_path);
  const std::optional<simdjson::dom::object> weight_map = reader.get_object("weight_map");
  if (reader.error()) return *reader.error();
  if (!weight_map) return Error{index_path + ": missing object 'weight_map'"};

  std::map<std::string, std::string, std::less<>> tensor_shard;
  std::map<std::string, std::size_t, std::less<>> shard_index;
  for (auto [tensor, shard_value] : *weight_map) {
    std::string_view shard;
    if (shard_value.get_string().get(shard) || !is_plain_file_name(shard)) {
      return Error{fmt::format("{}: weight_map['{}']: expected a file name in this directory",
                               index_path, printable(tensor))};
    }
    tensor_shard.emplace(std::string(tensor), std::string(shard));
    if (shard_index.contains(shard)) continue;
    Expected<SafetensorsFile> file = SafetensorsFile::open((dir / std::string(shard)).string());
    if (!file) return file.error();
    shard_index.emplace(std::string(shard), checkpoint.files_.size());
    checkpoint.files_.push_back(std::move(file).value());
  }
  for (std::size_t i = 0; i < checkpoint.files_.size(); ++i) {
    if (Status status = checkpoint.index_file(i); !status) return Error{status.message()};
  }
  for (const auto& [tensor, shard] : tensor_shard) {
    const SafetensorsFile& file = checkpoint.files_[shard_index.find(shard)->second];
    if (file.find_tensor(tensor) == nullptr) {
      return Error{fmt::format("{}: tensor '{}' is listed in {} but absent from it", index_path,
                               printable(tensor), printable(shard))};
    }
  }
  return checkpoint;
}

SafetensorsCheckpoint SafetensorsCheckpoint::from_file(SafetensorsFile file) {
  SafetensorsCheckpoint checkpoint;
  checkpoint.files_.push_back(std::move(file));
  for (const SafetensorsTensorInfo& tensor : checkpoint.files_[0].tensors()) {
    checkpoint.tensor_file_.emplace(tensor.name, 0);
  }
  return checkpoint;
}

Status SafetensorsCheckpoint::index_file(std::size_t file_index) {
  for (const SafetensorsTensorInfo& tensor : files_[file_index].tensors()) {
    const auto [it, inserted] = tensor_file_.emplace(tensor.name, file_index);
    if (!inserted) {
      return Error{fmt::format("{}: tensor '{}' also appears in {}", files_[file_index].path(),
                               printable(tensor.name), files_[it->second].path())};
    }
  }
  return {};
}

const SafetensorsTensorInfo* SafetensorsCheckpoint::find_tensor(std::string_view name) const {
  const SafetensorsFile* file = file_of(name);
  return file == nullptr ? nullptr : file->find_tensor(name);
}

const SafetensorsFile* SafetensorsCheckpoint::file_of(std::string_view name) const {
  const auto it = tensor_file_.find(std::string(name));
  return it == tensor_file_.end() ? nullptr : &files_[it->second];
}

std::uint64_t SafetensorsCheckpoint::total_bytes() const {
  std::uint64_t total = 0;
  for (const SafetensorsFile& file : files_) total += file.file_bytes();
  return total;
}

}  // namespace tern::engine
