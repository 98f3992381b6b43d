#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/data/npy.hpp"
#include "core/data/pickle.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {

std::vector<std::byte> to_bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

/// A version-1.0 image with a hand-written header dict (padded like numpy) and raw data.
std::vector<std::byte> npy_image(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string img = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  img += static_cast<char>(h.size() & 0xFF);
  img += static_cast<char>((h.size() >> 8) & 0xFF);
  if (major != 1) img += std::string(2, '\0');
  return to_bytes(img + h + data);
}

template <typename T>
std::string raw(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

/// Expects an InputError whose message names `origin` and contains `needle`.
template <typename F>
void expect_input_error(F&& f, const std::string& origin, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected one mentioning '" << needle << "'";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(origin), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(Npy, RoundTripsEveryWritableDtype) {
  test::ScratchDir dir;
  struct Case {
    NpyType type;
    std::size_t item;
  };
  const Case cases[] = {{NpyType::f4, 4}, {NpyType::f8, 8}, {NpyType::i1, 1}, {NpyType::i2, 2},
                        {NpyType::i4, 4}, {NpyType::i8, 8}, {NpyType::u1, 1}, {NpyType::u2, 2},
                        {NpyType::u4, 4}, {NpyType::u8, 8}, {NpyType::b1, 1},
                        {NpyType::unicode, 12}};
  for (const auto& c : cases) {
    for (const std::vector<std::int64_t>& shape :
         {std::vector<std::int64_t>{}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 2}}) {
      std::int64_t n = 1;
      for (auto d : shape) n *= d;
      std::vector<std::byte> data(static_cast<std::size_t>(n) * c.item);
      for (std::size_t k = 0; k < data.size(); ++k)
        data[k] = static_cast<std::byte>(c.type == NpyType::b1 ? k % 2 : (k * 37 + 11) % 251);
      if (c.type == NpyType::unicode)  // valid code points: one byte each, rest zero
        for (std::size_t k = 0; k < data.size(); ++k)
          data[k] = k % 4 == 0 ? static_cast<std::byte>('a' + k % 26) : std::byte{0};
      const std::string path = dir.file("a.npy");
      if (c.type == NpyType::unicode && n == 0) continue;  // item size undefined without data
      write_npy(path, c.type, shape, data);
      const NpyArray a = read_npy(path);
      EXPECT_EQ(a.type, c.type);
      EXPECT_EQ(a.item_size, c.item);
      EXPECT_EQ(a.shape, shape);
      EXPECT_FALSE(a.fortran_order);
      EXPECT_EQ(a.count(), n);
      EXPECT_EQ(a.data, data);
      // numpy aligns the data start to 64 bytes; so do we.
      std::ifstream in(path, std::ios::binary | std::ios::ate);
      EXPECT_EQ((static_cast<std::size_t>(in.tellg()) - data.size()) % 64, 0u);
    }
  }
}

TEST(Npy, ParsesHeaderVariantsIncludingVersion2) {
  const std::string d = raw<std::int32_t>({1, -2, 3});
  for (int major : {1, 2, 3}) {
    const NpyArray a =
        parse_npy(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", d, major),
                  "v.npy");
    EXPECT_EQ(npy_to_int64(a, "v.npy"), (std::vector<std::int64_t>{1, -2, 3}));
  }
  // Key order, double quotes, no trailing comma, Python 2 long suffix, 0-d shape.
  const NpyArray b = parse_npy(
      npy_image("{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i4\"}", d), "b.npy");
  EXPECT_EQ(b.shape, (std::vector<std::int64_t>{3}));
  const NpyArray s = parse_npy(
      npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", raw<double>({2.5})), "s");
  EXPECT_EQ(s.count(), 1);
  EXPECT_EQ(npy_to_float32(s, "s"), (std::vector<float>{2.5f}));
}

TEST(Npy, ReordersFortranArraysIntoCOrder) {
  // 2 x 3 matrix [[1,2,3],[4,5,6]] stored column-major.
  const NpyArray a = parse_npy(
      npy_image("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }",
                raw<std::int64_t>({1, 4, 2, 5, 3, 6})),
      "f.npy");
  EXPECT_TRUE(a.fortran_order);
  EXPECT_EQ(npy_to_int64(a, "f.npy"), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(npy_to_float32(a, "f.npy"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(npy_to_uint8(a, "f.npy"), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));
  // 2 x 2 x 2, element (i,j,k) = 100i + 10j + k, Fortran offset i + 2j + 4k.
  std::vector<std::int16_t> f(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) f[i + 2 * j + 4 * k] = static_cast<std::int16_t>(100 * i + 10 * j + k);
  const NpyArray c = parse_npy(
      npy_image("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 2, 2), }",
                std::string(reinterpret_cast<const char*>(f.data()), 16)),
      "c.npy");
  EXPECT_EQ(npy_to_int64(c, "c.npy"), (std::vector<std::int64_t>{0, 1, 10, 11, 100, 101, 110, 111}));
  const auto bytes = npy_c_order_bytes(c);
  std::int16_t last;
  std::memcpy(&last, bytes.data() + 14, 2);
  EXPECT_EQ(last, 111);
}

TEST(Npy, ConvertsOnlyWhenLossless) {
  const auto f8 = parse_npy(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                      raw<double>({0.1, -3.0})),
                            "f8.npy");
  EXPECT_EQ(npy_to_float32(f8, "f8.npy"), (std::vector<float>{0.1f, -3.0f}));
  expect_input_error([&] { npy_to_int64(f8, "f8.npy"); }, "f8.npy", "integer");

  const auto big = parse_npy(npy_image("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                       raw<std::int64_t>({(1 << 24) + 1, std::int64_t{1} << 40})),
                             "big.npy");
  expect_input_error([&] { npy_to_float32(big, "big.npy"); }, "big.npy", "element 0");
  const auto pow2 = parse_npy(npy_image("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                                        raw<std::int64_t>({std::int64_t{1} << 40})),
                              "p.npy");
  EXPECT_EQ(npy_to_float32(pow2, "p")[0], std::ldexp(1.0f, 40));

  const auto u8 = parse_npy(npy_image("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
                                      raw<std::uint64_t>({std::uint64_t{1} << 63})),
                            "u.npy");
  expect_input_error([&] { npy_to_int64(u8, "u.npy"); }, "u.npy", "int64 range");

  const auto b1 = parse_npy(npy_image("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                      std::string("\x01\x00\x01", 3)),
                            "b.npy");
  EXPECT_EQ(npy_to_uint8(b1, "b.npy"), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(npy_to_int64(b1, "b.npy"), (std::vector<std::int64_t>{1, 0, 1}));

  const auto i2 = parse_npy(npy_image("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }",
                                      raw<std::int16_t>({7, 300})),
                            "i2.npy");
  expect_input_error([&] { npy_to_uint8(i2, "i2.npy"); }, "i2.npy", "[0, 255]");
  const auto neg = parse_npy(npy_image("{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }",
                                       raw<std::int8_t>({-1})),
                             "n.npy");
  expect_input_error([&] { npy_to_uint8(neg, "n.npy"); }, "n.npy", "[0, 255]");
}

TEST(Npy, DecodesUnicodeArraysToUtf8) {
  std::vector<char32_t> cps = {U'C', U'a', U'f', U'\u00e9', U'x', 0, 0, 0, U'\U0001F600', 0, 0, 0};
  const auto a = parse_npy(npy_image("{'descr': '<U4', 'fortran_order': False, 'shape': (3,), }",
                                     std::string(reinterpret_cast<const char*>(cps.data()), 48)),
                           "u.npy");
  EXPECT_EQ(a.item_size, 16u);
  EXPECT_EQ(npy_to_strings(a, "u.npy"),
            (std::vector<std::string>{"Caf\xc3\xa9", "x", "\xf0\x9f\x98\x80"}));
}

TEST(Npy, RejectsMalformedFilesNamingThem) {
  const std::string good = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  const std::string d = raw<std::int32_t>({1, 2, 3});
  auto bad = [&](std::vector<std::byte> img, const std::string& needle) {
    expect_input_error([&] { parse_npy(img, "/data/x/bad.npy"); }, "/data/x/bad.npy", needle);
  };
  bad(to_bytes("\x93NUMPX\x01\x00"), "bad magic");
  bad(to_bytes("PK\x03\x04 not npy at all"), "bad magic");
  bad({}, "bad magic");
  auto img = npy_image(good, d);
  img.resize(40);
  bad(img, "truncated .npy header");
  auto ver = npy_image(good, d);
  ver[6] = std::byte{9};
  bad(ver, "version 9");
  bad(npy_image(good, d.substr(0, 8)), "data truncated");
  bad(npy_image(good, d + "xx"), "after the data");
  bad(npy_image("{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", d), "big-endian");
  bad(npy_image("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", d), "dtype '<c8'");
  bad(npy_image("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,), }", d),
      "malformed");
  bad(npy_image("{'descr': '<i4', 'shape': (3,), }", d), "missing descr");
  bad(npy_image("{'descr': '<i4', 'fortran_order': Maybe, 'shape': (3,), }", d), "True or False");
  bad(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (-3,), }", d), "malformed");
  bad(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), } junk", d), "trailing");
  bad(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, "
                "4611686018427387904), }",
                d),
      "too large");
  expect_input_error([] { read_npy("/nonexistent/dir/missing.npy"); }, "missing.npy", "cannot open");
}

TEST(Npy, ADirectoryWhereAFileBelongsIsRefusedNamingIt) {
  // Reading a directory as a stream reported a size of 2^63 and died in std::bad_alloc.
  test::ScratchDir dir;
  const std::string p = dir.file("features.npy");
  std::filesystem::create_directory(p);
  expect_input_error([&] { read_npy(p); }, p, "is a directory, not a file");
  expect_input_error([&] { read_pickle(p); }, p, "is a directory, not a file");
  expect_input_error([&] { read_npz(p); }, p, "is a directory, not a file");
  expect_input_error([&] { read_json_file(p); }, p, "is a directory, not a file");
}

void write_image(const std::string& path, const std::vector<std::byte>& img) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
}

TEST(NpyRowReader, ReadsBlocksOfRowsAsReadNpyWould) {
  test::ScratchDir dir;
  // (5, 3) int32 in C order: element (i, j) = 10 i + j.
  const std::string c_path = dir.file("c.npy");
  std::vector<std::int32_t> c(15);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) c[static_cast<std::size_t>(i * 3 + j)] = 10 * i + j;
  write_npy(c_path, NpyType::i4, {5, 3}, c);
  // The same matrix stored in Fortran order (columns one after the other), in a version 2 file.
  const std::string f_path = dir.file("f.npy");
  std::string fdata;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 5; ++i) fdata += raw<std::int32_t>({10 * i + j});
  write_image(f_path, npy_image("{'descr': '<i4', 'fortran_order': True, 'shape': (5, 3), }",
                                fdata, 2));
  for (const std::string& path : {c_path, f_path}) {
    NpyRowReader r(path);
    EXPECT_EQ(r.rows(), 5);
    EXPECT_EQ(r.row_elements(), 3);
    EXPECT_EQ(r.header().type, NpyType::i4);
    EXPECT_TRUE(r.header().data.empty());
    std::vector<std::int32_t> got(6, -1);
    r.read_rows(1, 2, reinterpret_cast<std::byte*>(got.data()));
    EXPECT_EQ(got, (std::vector<std::int32_t>{10, 11, 12, 20, 21, 22})) << path;
    std::vector<std::int32_t> all(15);
    r.read_rows(0, 5, reinterpret_cast<std::byte*>(all.data()));
    EXPECT_EQ(all, c) << path;
    r.read_rows(5, 0, nullptr);  // an empty block reads nothing
  }
  // A 1-D array is a column of rows.
  write_npy(dir.file("v.npy"), NpyType::u1, {4}, std::vector<std::uint8_t>{7, 8, 9, 10});
  NpyRowReader v(dir.file("v.npy"));
  EXPECT_EQ(v.rows(), 4);
  EXPECT_EQ(v.row_elements(), 1);
  std::uint8_t two[2] = {};
  v.read_rows(2, 2, reinterpret_cast<std::byte*>(two));
  EXPECT_EQ(two[0], 9);
  EXPECT_EQ(two[1], 10);
}

TEST(NpyRowReader, RefusesWhatReadNpyRefusesAtOpenNamingTheFile) {
  test::ScratchDir dir;
  const std::string good = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  const std::string d = raw<std::int32_t>({1, 2, 3});
  auto bad = [&](const std::vector<std::byte>& img, const std::string& needle) {
    const std::string p = dir.file("bad.npy");
    write_image(p, img);
    expect_input_error([&] { NpyRowReader r(p); }, p, needle);
  };
  bad(to_bytes("\x93NUMPX\x01\x00"), "bad magic");
  bad({}, "bad magic");
  auto cut = npy_image(good, d);
  cut.resize(40);
  bad(cut, "truncated .npy header");
  bad(npy_image(good, d.substr(0, 8)), "data truncated: shape needs 12 bytes, file has 8");
  bad(npy_image(good, d + "xx"), "after the data");
  bad(npy_image("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", d),
      "object arrays cannot be read in blocks");
  bad(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, "
                "4611686018427387904), }",
                d),
      "too large");
  expect_input_error([] { NpyRowReader r("/nonexistent/dir/missing.npy"); }, "missing.npy",
                     "cannot open");
  std::filesystem::create_directory(dir.file("d.npy"));
  expect_input_error([&] { NpyRowReader r(dir.file("d.npy")); }, dir.file("d.npy"),
                     "is a directory, not a file");
  // Fortran order beyond two dimensions cannot be read by rows.
  const std::string p3 = dir.file("f3.npy");
  write_image(p3, npy_image("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2, 2), }",
                            std::string(8, 'x')));
  NpyRowReader r3(p3);
  std::byte out[4];
  expect_input_error([&] { r3.read_rows(0, 1, out); }, p3, "Fortran-order array of 3 dimensions");
  // A file that shrinks after the header was checked: the read says so instead of returning junk.
  const std::string ps = dir.file("shrinks.npy");
  write_npy(ps, NpyType::i4, {3}, std::vector<std::int32_t>{1, 2, 3});
  NpyRowReader rs(ps);
  std::filesystem::resize_file(ps, std::filesystem::file_size(ps) - 4);
  std::int32_t three[3];
  expect_input_error([&] { rs.read_rows(0, 3, reinterpret_cast<std::byte*>(three)); }, ps,
                     "the file ended early");
}

TEST(Npy, WriteReplacesAnExistingFileAtomically) {
  test::ScratchDir dir;
  const std::string p = dir.file("w.npy");
  write_npy(p, NpyType::i4, {2}, std::vector<std::int32_t>{1, 2});
  write_npy(p, NpyType::f8, {1, 1}, std::vector<double>{4.5});
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.type, NpyType::f8);
  EXPECT_EQ(npy_to_float32(a, p), (std::vector<float>{4.5f}));
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
  EXPECT_THROW(write_npy(p, NpyType::i4, {3}, std::vector<std::int32_t>{1, 2}), Error);
}

}  // namespace
}  // namespace halognn
