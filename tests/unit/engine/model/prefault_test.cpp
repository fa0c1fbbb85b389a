#include "engine/model/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace tern::engine {
namespace {

std::size_t page_size() {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// An anonymous read-only mapping nobody has touched: none of its pages is resident until read,
// as with a model file fresh from disk. Huge pages are off, so one read maps one page only.
class UntouchedMapping {
 public:
  explicit UntouchedMapping(std::size_t bytes) : bytes_(bytes) {
    void* address = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) return;
    data_ = static_cast<std::byte*>(address);
    ::madvise(address, bytes, MADV_NOHUGEPAGE);
  }
  ~UntouchedMapping() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  UntouchedMapping(const UntouchedMapping&) = delete;
  UntouchedMapping& operator=(const UntouchedMapping&) = delete;

  bool ok() const { return data_ != nullptr; }
  std::span<const std::byte> bytes() const { return {data_, bytes_}; }

  // Which pages of the region [offset, offset + length) are resident, per mincore().
  std::vector<bool> resident_pages(std::size_t offset, std::size_t length) const {
    const std::size_t page = page_size();
    const std::size_t first = offset / page;
    const std::size_t end = (offset + length + page - 1) / page;
    std::vector<unsigned char> flags(end - first);
    EXPECT_EQ(::mincore(data_ + first * page, (end - first) * page, flags.data()), 0);
    std::vector<bool> resident(flags.size());
    for (std::size_t i = 0; i < flags.size(); ++i) resident[i] = (flags[i] & 1) != 0;
    return resident;
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t bytes_;
};

TEST(Prefault, MakesEveryPageOfUnalignedRegionsResident) {
  const std::size_t page = page_size();
  UntouchedMapping mapping((std::size_t{3} << 20) + 5 * page);
  ASSERT_TRUE(mapping.ok());
  struct Region {
    std::size_t offset;
    std::size_t length;
  };
  // A long region starting mid-page; one of two bytes that straddle a page boundary; one that
  // ends a byte into its last page; and an empty one.
  const std::size_t after_long = (std::size_t{3} << 20) + page;
  const std::vector<Region> regions{{7, std::size_t{3} << 20},
                                    {after_long + page - 1, 2},
                                    {after_long + 2 * page + 100, page - 99},
                                    {after_long + 4 * page, 0}};
  std::vector<std::span<const std::byte>> spans;
  for (const Region& region : regions) {
    for (const bool resident : mapping.resident_pages(region.offset, region.length)) {
      ASSERT_FALSE(resident) << "the mapping was resident before prefault";
    }
    spans.push_back(mapping.bytes().subspan(region.offset, region.length));
  }

  prefault(spans, "test mapping");

  for (const Region& region : regions) {
    const std::vector<bool> resident = mapping.resident_pages(region.offset, region.length);
    const auto missing = std::find(resident.begin(), resident.end(), false);
    EXPECT_EQ(missing, resident.end())
        << std::count(resident.begin(), resident.end(), false) << " of " << resident.size()
        << " pages of the region at " << region.offset << " (" << region.length
        << " bytes) are not resident, the first is page " << (missing - resident.begin());
  }
}

TEST(Prefault, ReportsResidentMemory) {
  const std::vector<std::byte> buffer(std::size_t{3} << 20, std::byte{1});
  const std::optional<std::uint64_t> resident = resident_memory_bytes();
  ASSERT_TRUE(resident);
  EXPECT_GT(*resident, buffer.size());
}

}  // namespace
}  // namespace tern::engine
