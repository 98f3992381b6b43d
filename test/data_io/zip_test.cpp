#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "core/data/npy.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {

struct Member {
  std::string name;
  std::string data;
  bool deflate = false;
  bool descriptor = false;  ///< flag bit 3: zero sizes and CRC in the local header
};

void put(std::string& s, std::uint64_t v, int n) {
  for (int k = 0; k < n; ++k) s += static_cast<char>((v >> (8 * k)) & 0xFF);
}

std::string raw_deflate(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// A minimal ZIP writer, written independently of the reader from the ZIP specification.
/// `crc_delta` is added to every stored CRC to simulate corruption.
std::string build_zip(const std::vector<Member>& members, std::uint32_t crc_delta = 0) {
  std::string file, central;
  for (const auto& m : members) {
    const std::string payload = m.deflate ? raw_deflate(m.data) : m.data;
    const auto crc = static_cast<std::uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(m.data.data()), static_cast<uInt>(m.data.size())) +
        crc_delta);
    const std::uint16_t flags = m.descriptor ? 8 : 0;
    const std::uint16_t method = m.deflate ? 8 : 0;
    const std::size_t offset = file.size();
    put(file, 0x04034b50, 4);
    put(file, 20, 2);
    put(file, flags, 2);
    put(file, method, 2);
    put(file, 0, 4);  // time, date
    put(file, m.descriptor ? 0 : crc, 4);
    put(file, m.descriptor ? 0 : payload.size(), 4);
    put(file, m.descriptor ? 0 : m.data.size(), 4);
    put(file, m.name.size(), 2);
    put(file, 4, 2);  // an unknown extra field the reader must skip
    file += m.name;
    put(file, 0xCAFE, 2);
    put(file, 0, 2);
    file += payload;
    if (m.descriptor) {
      put(file, 0x08074b50, 4);
      put(file, crc, 4);
      put(file, payload.size(), 4);
      put(file, m.data.size(), 4);
    }
    put(central, 0x02014b50, 4);
    put(central, 20, 2);
    put(central, 20, 2);
    put(central, flags, 2);
    put(central, method, 2);
    put(central, 0, 4);
    put(central, crc, 4);
    put(central, payload.size(), 4);
    put(central, m.data.size(), 4);
    put(central, m.name.size(), 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 4);
    put(central, offset, 4);
    central += m.name;
  }
  const std::size_t cd_offset = file.size();
  file += central;
  put(file, 0x06054b50, 4);
  put(file, 0, 4);
  put(file, members.size(), 2);
  put(file, members.size(), 2);
  put(file, central.size(), 4);
  put(file, cd_offset, 4);
  put(file, 0, 2);
  return file;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string as_string(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::string npy_bytes(const test::ScratchDir& dir, NpyType t, std::vector<std::int64_t> shape,
                      const std::string& data) {
  const std::string p = dir.file("member.npy");
  write_npy(p, t, shape, std::as_bytes(std::span<const char>(data.data(), data.size())));
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Zip, ReadsStoredDeflatedAndDescriptorMembers) {
  test::ScratchDir dir;
  std::string big(100000, '\0');
  for (std::size_t k = 0; k < big.size(); ++k) big[k] = static_cast<char>((k * k) % 7);
  const std::vector<Member> members = {{"stored.bin", "hello stored", false, false},
                                       {"deflated.bin", big, true, false},
                                       {"dir/desc.bin", big.substr(10, 5000), true, true},
                                       {"empty.bin", "", true, false},
                                       {"empty_stored", "", false, false}};
  const std::string path = dir.file("a.zip");
  write_file(path, build_zip(members));
  const ZipArchive zip(path);
  EXPECT_EQ(zip.names(), (std::vector<std::string>{"stored.bin", "deflated.bin", "dir/desc.bin",
                                                   "empty.bin", "empty_stored"}));
  EXPECT_TRUE(zip.contains("dir/desc.bin"));
  EXPECT_FALSE(zip.contains("desc.bin"));
  for (const auto& m : members) EXPECT_EQ(as_string(zip.read(m.name)), m.data) << m.name;
}

TEST(Zip, DetectsCrcMismatchAndCorruptData) {
  test::ScratchDir dir;
  const std::string p1 = dir.file("crc.zip");
  write_file(p1, build_zip({{"a.bin", "some data", false, false}, {"b.bin", "more data", true, false}}, 1));
  const ZipArchive zip(p1);
  for (const char* name : {"a.bin", "b.bin"}) {
    try {
      zip.read(name);
      ADD_FAILURE() << "CRC mismatch not detected for " << name;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(p1 + ":" + name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("CRC32"), std::string::npos) << e.what();
    }
  }
  // Flip bytes inside a deflate stream: either inflate fails or the CRC catches it.
  std::string img = build_zip({{"c.bin", std::string(5000, 'x') + "tail", true, false}});
  img[30 + 5 + 4 + 3] ^= 0x5A;
  const std::string p2 = dir.file("corrupt.zip");
  write_file(p2, img);
  EXPECT_THROW(ZipArchive(p2).read("c.bin"), InputError);
  EXPECT_THROW(ZipArchive(p2).read("nope.bin"), InputError);
}

TEST(Zip, AMemberDeclaringMoreThanDeflateCanExpandIsRefusedBeforeAllocating) {
  // Found by fuzz_npz: a 637-byte archive whose member declares 2.8 GB made the reader allocate
  // them. The regression input is kept in the fuzz corpus.
  const char* src = std::getenv("HALOGNN_SOURCE_DIR");
  if (!src) GTEST_SKIP() << "HALOGNN_SOURCE_DIR not set (ctest sets it)";
  const std::string p = std::string(src) + "/test/fuzz/corpus/npz/regress-deflate-declared-size.npz";
  try {
    read_npz(p);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than DEFLATE can expand"), std::string::npos)
        << e.what();
  }
}

TEST(Zip, RejectsNonArchivesNamingTheFile) {
  test::ScratchDir dir;
  const std::string p = dir.file("not.zip");
  write_file(p, std::string(200, 'z'));
  try {
    ZipArchive z(p);
    ADD_FAILURE() << "accepted a non-ZIP file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
  }
  EXPECT_THROW(ZipArchive(dir.file("missing.zip")), InputError);
  std::string img = build_zip({{"a.bin", "abc", false, false}});
  img.resize(img.size() - 3);  // truncated end record
  write_file(p, img);
  EXPECT_THROW(ZipArchive{p}, InputError);
}

TEST(Zip, ReadsNpzMembersByArrayName) {
  test::ScratchDir dir;
  const std::string a = npy_bytes(dir, NpyType::i4, {2, 2}, std::string("\1\0\0\0\2\0\0\0\3\0\0\0\4\0\0\0", 16));
  const std::string b = npy_bytes(dir, NpyType::f4, {1}, std::string("\0\0\x80\x3f", 4));
  const std::string path = dir.file("x.npz");
  write_file(path, build_zip({{"a.npy", a, true, false}, {"b.npy", b, false, false},
                              {"readme.txt", "ignored", false, false}}));
  const auto arrays = read_npz(path);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(npy_to_int64(arrays.at("a"), "a"), (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(npy_to_float32(arrays.at("b"), "b"), (std::vector<float>{1.0f}));
  // A corrupt member is reported as archive:member.
  write_file(path, build_zip({{"bad.npy", "\x93NUMPY garbage", true, false}}));
  try {
    read_npz(path);
    ADD_FAILURE() << "corrupt member accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":bad.npy"), std::string::npos) << e.what();
  }
}

TEST(Zip, ReadsTheSharedNpzFiles) {
  const std::string root = test::shared_datasets();
  if (root.empty()) GTEST_SKIP() << "shared datasets not present";
  // Stored members (numpy.savez).
  const auto photo = read_npz(root + "/amazon-photo/amazon_co_buy_photo.npz");
  EXPECT_EQ(photo.at("adj_indptr").shape, (std::vector<std::int64_t>{7651}));
  EXPECT_EQ(photo.at("adj_data").shape, (std::vector<std::int64_t>{143663}));
  EXPECT_EQ(photo.at("labels").type, NpyType::i8);
  EXPECT_EQ(npy_to_strings(photo.at("class_names"), "c")[1], "Digital Cameras");
  // The DGL wrapper sets the data-descriptor flag; its member is itself an npz.
  const ZipArchive wrapper(root + "/amazon-photo/amazon_co_buy_photo.zip");
  EXPECT_EQ(wrapper.names(), (std::vector<std::string>{"amazon_co_buy_photo.npz"}));
  EXPECT_EQ(wrapper.read("amazon_co_buy_photo.npz").size(), 17113960u);
  // Deflated members with Fortran-order masks.
  const auto cham = read_npz(root + "/chameleon/chameleon.npz");
  const NpyArray& train = cham.at("train_masks");
  EXPECT_TRUE(train.fortran_order);
  EXPECT_EQ(train.shape, (std::vector<std::int64_t>{10, 2277}));
  const auto mask = npy_to_uint8(train, "train_masks");
  std::int64_t row0 = 0, col0 = 0;
  for (int j = 0; j < 2277; ++j) row0 += mask[j];
  for (int i = 0; i < 10; ++i) col0 += mask[i * 2277];
  EXPECT_EQ(row0, 1092);
  EXPECT_EQ(col0, 6);
}

NpyArray array_of(NpyType type, std::vector<std::int64_t> shape, std::string bytes,
                  std::size_t item) {
  NpyArray a;
  a.type = type;
  a.item_size = item;
  a.shape = std::move(shape);
  a.data.resize(bytes.size());
  // An empty array has no storage: memcpy from or to a null pointer is undefined even for 0 bytes.
  if (!bytes.empty()) std::memcpy(a.data.data(), bytes.data(), bytes.size());
  return a;
}

TEST(Zip, WritesNpzThatReadsBackWithCrcsAndZip64Records) {
  test::ScratchDir dir;
  std::map<std::string, NpyArray> arrays;
  arrays["layer0.weight"] = array_of(NpyType::f4, {2, 2}, std::string("\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40", 16), 4);
  arrays["policy/layer1/epochs"] = array_of(NpyType::i8, {1}, std::string("\x07\0\0\0\0\0\0\0", 8), 8);
  arrays["empty"] = array_of(NpyType::u1, {0}, "", 1);
  arrays["scalar"] = array_of(NpyType::f8, {}, std::string("\0\0\0\0\0\0\xf0\x3f", 8), 8);
  // A Fortran-order array is written in C order.
  NpyArray f = array_of(NpyType::i4, {2, 3}, std::string("\1\0\0\0\4\0\0\0\2\0\0\0\5\0\0\0\3\0\0\0\6\0\0\0", 24), 4);
  f.fortran_order = true;
  arrays["fortran"] = f;
  for (const bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "ZIP64 records" : "plain records");
    const std::string path = dir.file(zip64 ? "z64.npz" : "z.npz");
    const WrittenFile w = write_npz(path, arrays, zip64);
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_EQ(w.bytes, bytes.size());
    EXPECT_EQ(w.crc32, ::crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
                               static_cast<uInt>(bytes.size())));
    // Central directory and end records as numpy's zipfile expects them: ZIP64 or not.
    EXPECT_EQ(bytes.find(std::string("PK\x06\x06", 4)) != std::string::npos, zip64);
    const auto back = read_npz(path);
    ASSERT_EQ(back.size(), arrays.size());
    for (const auto& [name, a] : arrays) {
      const NpyArray& b = back.at(name);
      EXPECT_EQ(b.type, a.type) << name;
      EXPECT_EQ(b.shape, a.shape) << name;
      EXPECT_FALSE(b.fortran_order) << name;
      EXPECT_EQ(b.data, npy_c_order_bytes(a)) << name;
    }
    EXPECT_EQ(npy_to_int64(back.at("fortran"), "f"), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
    // Equal arrays give equal files (fixed timestamps).
    EXPECT_EQ(write_npz(path, arrays, zip64).crc32, w.crc32);
    // A flipped data byte is caught by the member's CRC.
    std::string bad = bytes;
    bad[bytes.find("\x07\0\0\0\0\0\0\0")] = '\x08';
    std::ofstream(path, std::ios::binary) << bad;
    EXPECT_THROW(read_npz(path), InputError);
  }
  EXPECT_THROW(write_npz(dir.file("no/such/dir/x.npz"), arrays), InputError);
}

}  // namespace
}  // namespace halognn
