#include "base/temporary_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("strata-temporary-path-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(TemporaryPath, RemovesWhatItHoldsUnlessReleased) {
  const fs::path dir = scratch("release");
  {
    TemporaryPath file((dir / "file").string(), TemporaryPath::Kind::kFile);
    std::ofstream(file.path()) << "partial";
    TemporaryPath directory((dir / "directory").string(), TemporaryPath::Kind::kDirectory);
    fs::create_directory(directory.path());
    std::ofstream(dir / "directory" / "a") << "a";
    TemporaryPath kept((dir / "kept").string(), TemporaryPath::Kind::kFile);
    std::ofstream(kept.path()) << "complete";
    kept.release();
    EXPECT_TRUE(kept.path().empty());
  }
  EXPECT_FALSE(fs::exists(dir / "file"));
  EXPECT_FALSE(fs::exists(dir / "directory"));
  EXPECT_TRUE(fs::exists(dir / "kept"));
}

TEST(TemporaryPath, MovesOwnership) {
  const fs::path dir = scratch("move");
  TemporaryPath outer;
  {
    TemporaryPath inner((dir / "file").string(), TemporaryPath::Kind::kFile);
    std::ofstream(inner.path()) << "partial";
    outer = std::move(inner);
  }
  EXPECT_TRUE(fs::exists(dir / "file"));  // the moved-from one removed nothing
  outer.remove();
  EXPECT_FALSE(fs::exists(dir / "file"));
}

}  // namespace
}  // namespace strata
