#include "engine/model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace tern::engine {
namespace {

// Closes the descriptor on every path out of open(); the mapping outlives it.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Error system_error(const std::string& path, const char* what) {
  return Error{path + ": " + what + ": " + std::strerror(errno)};
}

}  // namespace

Expected<MappedFile> MappedFile::open(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return system_error(path, "cannot open");
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return system_error(path, "cannot stat");
  if (!S_ISREG(info.st_mode)) return Error{path + ": not a regular file"};

  MappedFile file;
  file.path_ = path;
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) return file;  // mmap rejects empty ranges; an empty span says it all
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (mapping == MAP_FAILED) return system_error(path, "cannot map");
  file.mapping_ = mapping;
  file.mapping_size_ = size;
  return file;
}

MappedFile MappedFile::from_bytes(std::vector<std::byte> bytes, std::string name) {
  MappedFile file;
  file.owned_ = std::move(bytes);
  file.path_ = std::move(name);
  return file;
}

Expected<MappedFile> MappedFile::from_filled_memory(
    std::size_t size, std::string name, const std::function<Status(std::span<std::byte>)>& fill) {
  MappedFile file;
  file.path_ = std::move(name);
  if (size == 0) return file;
  void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    return system_error(file.path_, ("cannot allocate " + std::to_string(size) + " bytes").c_str());
  }
  file.mapping_ = mapping;  // released by file's destructor on every path out
  file.mapping_size_ = size;
  ::madvise(mapping, size, MADV_HUGEPAGE);  // a hint: without THP it fails, and nothing changes
  if (Status filled = fill({static_cast<std::byte*>(mapping), size}); !filled.ok()) {
    return filled.error();
  }
  if (::mprotect(mapping, size, PROT_READ) != 0) return system_error(file.path_, "mprotect");
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_size_(std::exchange(other.mapping_size_, 0)),
      owned_(std::move(other.owned_)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_size_ = std::exchange(other.mapping_size_, 0);
    owned_ = std::move(other.owned_);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  release();
}

void MappedFile::release() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
}

std::span<const std::byte> MappedFile::bytes() const {
  if (mapping_ != nullptr) return {static_cast<const std::byte*>(mapping_), mapping_size_};
  return owned_;
}

}  // namespace tern::engine
