#include <gtest/gtest.h>

#include <cstring>

#include "core/data/npy.hpp"
#include "core/data/pickle.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {

using Kind = PyValue::Kind;
using namespace std::string_literals;

PyValue parse(const std::string& ops, const std::string& origin = "t.pkl") {
  return parse_pickle(std::as_bytes(std::span<const char>(ops.data(), ops.size())), origin);
}

std::string u8(unsigned v) { return std::string(1, static_cast<char>(v)); }
std::string u32(std::uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
/// SHORT_BINSTRING (protocol 2 "str").
std::string pstr(const std::string& s) { return "U"s + u8(static_cast<unsigned>(s.size())) + s; }
/// BINUNICODE.
std::string ptext(const std::string& s) { return "X"s + u32(static_cast<std::uint32_t>(s.size())) + s; }

/// numpy.dtype(code) with its BUILD state, as numpy pickles it (no memo).
std::string pdtype(const std::string& code, const char* endian = "<", int elsize = -1) {
  return "cnumpy\ndtype\n" + pstr(code) + "K\x00K\x01\x87R(K\x03"s + pstr(endian) + "NNN" +
         "J"s + u32(static_cast<std::uint32_t>(elsize)) + "J\xff\xff\xff\xff"s + "K\x00tb"s;
}

/// numpy.core.multiarray._reconstruct + BUILD, protocol-2 style, with a byte-string payload.
std::string pndarray(const std::string& dtype_ops, const std::string& shape_ops,
                     const std::string& payload_ops) {
  return "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85"s +
         pstr("b") + "\x87R(K\x01" + shape_ops + dtype_ops + "\x89" + payload_ops + "tb";
}

std::string bytes_of(std::initializer_list<std::int32_t> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * 4);
}
std::string bytes_of_f(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * 4);
}
std::string T(const std::string& raw) { return "T"s + u32(static_cast<std::uint32_t>(raw.size())) + raw; }

TEST(Pickle, DecodesScalarsStringsAndTuples) {
  const std::string ops = "\x80\x02(K\x01M\x00\x01J\xff\xff\xff\xffN\x88\x89"s +
                          pstr("abc") + ptext("h\xc3\xa9") + "\x8a\x02\x00\xff"s +
                          "G\x3f\xf8\x00\x00\x00\x00\x00\x00"s + "C\x02xy" + ")" + "t.";
  const PyValue v = parse(ops);
  ASSERT_EQ(v.kind, Kind::tuple);
  ASSERT_EQ(v.items.size(), 12u);
  EXPECT_EQ(v.items[0].i, 1);
  EXPECT_EQ(v.items[1].i, 256);
  EXPECT_EQ(v.items[2].i, -1);
  EXPECT_EQ(v.items[3].kind, Kind::none);
  EXPECT_TRUE(v.items[4].b);
  EXPECT_FALSE(v.items[5].b);
  EXPECT_EQ(v.items[6].kind, Kind::bytes);
  EXPECT_EQ(v.items[6].s, "abc");
  EXPECT_EQ(v.items[7].kind, Kind::text);
  EXPECT_EQ(v.items[7].s, "h\xc3\xa9");
  EXPECT_EQ(v.items[8].i, -256);
  EXPECT_EQ(v.items[9].f, 1.5);
  EXPECT_EQ(v.items[10].s, "xy");
  EXPECT_EQ(v.items[11].kind, Kind::tuple);
  EXPECT_TRUE(v.items[11].items.empty());
}

TEST(Pickle, MemoSeesObjectsCompletedAfterTheyWereMemoized) {
  // [1, 2] memoized while still empty, filled by APPEND/APPENDS, then fetched twice.
  const std::string ops = "\x80\x02(]q\x00K\x01" "a(K\x02K\x03" "ej"s + u32(0) +
                          "}q\x01(K\x05h\x00K\x06]ut."s;
  const PyValue v = parse(ops);
  ASSERT_EQ(v.kind, Kind::tuple);
  ASSERT_EQ(v.items.size(), 3u);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(v.items[k].kind, Kind::list);
    ASSERT_EQ(v.items[k].items.size(), 3u);
    EXPECT_EQ(v.items[k].items[2].i, 3);
  }
  const PyValue& d = v.items[2];
  ASSERT_EQ(d.kind, Kind::dict);
  ASSERT_NE(d.find(std::int64_t{5}), nullptr);
  EXPECT_EQ(py_to_int64_list(*d.find(std::int64_t{5}), "t"), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_TRUE(d.find(std::int64_t{6})->items.empty());
  EXPECT_EQ(d.find(std::int64_t{7}), nullptr);
}

TEST(Pickle, DecodesNumpyArraysAndReusesAMemoizedDtype) {
  // Second array: dtype fetched from the memo after its BUILD ran.
  const std::string ops =
      "\x80\x02("s +
      pndarray("cnumpy\ndtype\n" + pstr("i4") + "K\x00K\x01\x87Rq\x07(K\x03"s + pstr("<") +
                   "NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"s,
               "K\x02K\x03\x86", T(bytes_of({0, 1, 2, 3, 4, 5}))) +
      pndarray("h\x07", "K\x01\x85", T(bytes_of({42}))) + "t.";
  const PyValue v = parse(ops);
  ASSERT_EQ(v.items.size(), 2u);
  const PyValue& a = v.items[0];
  ASSERT_EQ(a.kind, Kind::ndarray);
  EXPECT_EQ(a.array.type, NpyType::i4);
  EXPECT_EQ(a.array.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(npy_to_int64(a.array, "t"), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(v.items[1].array.type, NpyType::i4);
  EXPECT_EQ(npy_to_int64(v.items[1].array, "t"), (std::vector<std::int64_t>{42}));
}

TEST(Pickle, DecodesObjectArraysOfStringsAndUnicodeArrays) {
  const std::string obj = "\x80\x03"s + pndarray(pdtype("O8", "|"), "K\x02\x85",
                                                "]("s + ptext("Desktops") + ptext("Data Storage") + "e") +
                          ".";
  const PyValue o = parse(obj);
  ASSERT_EQ(o.kind, Kind::ndarray);
  EXPECT_EQ(o.array.type, NpyType::object);
  EXPECT_EQ(py_to_strings(o, "t"), (std::vector<std::string>{"Desktops", "Data Storage"}));

  const std::u32string s = U"ab\0c\0\0"s;
  const std::string payload(reinterpret_cast<const char*>(s.data()), 24);
  const PyValue u = parse("\x80\x02"s + pndarray(pdtype("U3", "<", 12), "K\x02\x85", T(payload)) + ".");
  EXPECT_EQ(u.array.type, NpyType::unicode);
  EXPECT_EQ(u.array.item_size, 12u);
  EXPECT_EQ(py_to_strings(u, "t"), (std::vector<std::string>{"ab", "c"}));
}

TEST(Pickle, DecodesScipyCsrMatricesWithKeysInAnyOrder) {
  // [[0, 0, 1], [2, 3, 0]]
  const std::string state =
      "}(" + pstr("data") + pndarray(pdtype("f4"), "K\x03\x85", T(bytes_of_f({1, 2, 3}))) +
      pstr("format") + pstr("csr") + pstr("indices") +
      pndarray(pdtype("i4"), "K\x03\x85", T(bytes_of({2, 0, 1}))) + pstr("_shape") + "K\x02K\x03\x86" +
      pstr("indptr") + pndarray(pdtype("i4"), "K\x03\x85", T(bytes_of({0, 1, 3}))) + pstr("maxprint") +
      "K2u"s;
  const PyValue m = parse("\x80\x02" "cscipy.sparse.csr\ncsr_matrix\n)\x81"s + state + "b.");
  ASSERT_EQ(m.kind, Kind::csr);
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.cols, 3);
  EXPECT_EQ(m.indptr, (std::vector<std::int64_t>{0, 1, 3}));
  EXPECT_EQ(m.indices, (std::vector<std::int64_t>{2, 0, 1}));
  EXPECT_EQ(m.data, (std::vector<float>{1, 2, 3}));
  // A column index outside the shape is rejected.
  std::string bad = state;
  bad.replace(bad.find(bytes_of({2, 0, 1})), 12, bytes_of({3, 0, 1}));
  EXPECT_THROW(parse("\x80\x02" "cscipy.sparse.csr\ncsr_matrix\n)\x81"s + bad + "b."), InputError);
}

TEST(Pickle, DecodesDefaultdictOfLists) {
  const std::string ops = "\x80\x02" "ccollections\ndefaultdict\nq\x00" "c__builtin__\nlist\n\x85Rq\x01"
                          "(K\x00](K\x01K\x02" "eK\x01]K\x00" "au."s;
  const PyValue d = parse(ops);
  ASSERT_EQ(d.kind, Kind::dict);
  ASSERT_EQ(d.dict.size(), 2u);
  EXPECT_EQ(py_to_int64_list(*d.find(std::int64_t{0}), "t"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(py_to_int64_list(*d.find(std::int64_t{1}), "t"), (std::vector<std::int64_t>{0}));
}

TEST(Pickle, KeepsUnknownClassesInert) {
  const PyValue v = parse("\x80\x02" "cfoo\nBar\nK\x07\x85R}("s + pstr("x") + "K\x01ub.");
  ASSERT_EQ(v.kind, Kind::object);
  EXPECT_EQ(v.s, "foo.Bar");
  ASSERT_EQ(v.items.size(), 2u);
  EXPECT_EQ(v.items[0].items[0].i, 7);
  EXPECT_EQ(v.items[1].find("x")->i, 1);
}

TEST(Pickle, RejectsMalformedInputNamingTheFile) {
  auto bad = [](const std::string& ops, const std::string& needle) {
    try {
      parse(ops, "/d/ind.x.graph");
      ADD_FAILURE() << "accepted; expected '" << needle << "'";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("/d/ind.x.graph"), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    }
  };
  bad(""s, "missing STOP");
  bad("\x80\x02K\x01", "missing STOP");
  bad("\x80\x02U\x05" "ab", "truncated");
  bad("\x80\x02\xff.", "unsupported opcode 0xff");
  bad("\x80\x02" "a.", "stack underflow");
  bad("\x80\x02K\x09K\x01K\x02s.", "SETITEM on a int");
  bad("\x80\x02h\x09.", "memo key 9");
  bad("\x80\x02K\x01t.", "no MARK");
  bad("\x80\x02"s + pndarray(pdtype("i4"), "K\x03\x85", T(bytes_of({1, 2}))) + ".", "payload has 8 bytes");
  bad("\x80\x02"s + pndarray(pdtype("i4", ">"), "K\x01\x85", T(bytes_of({1}))) + ".", "big-endian");
  bad("\x80\x02"s + pndarray(pdtype("c8"), "K\x01\x85", T(bytes_of({1, 2}))) + ".", "dtype");
  bad("\x80\x02" "cscipy.sparse.csr\ncsr_matrix\n)\x81}b.", "lacks _shape");
}

TEST(Pickle, ReadsThePlanetoidCoraFiles) {
  const std::string root = test::shared_datasets();
  if (root.empty()) GTEST_SKIP() << "shared datasets not present";
  const PyValue x = read_pickle(root + "/cora/planetoid/ind.cora.x");
  ASSERT_EQ(x.kind, Kind::csr);
  EXPECT_EQ(x.rows, 140);
  EXPECT_EQ(x.cols, 1433);
  EXPECT_EQ(x.indices.size(), 2647u);
  EXPECT_EQ(x.data.size(), 2647u);
  const PyValue g = read_pickle(root + "/cora/planetoid/ind.cora.graph");
  ASSERT_EQ(g.kind, Kind::dict);
  EXPECT_EQ(g.dict.size(), 2708u);
  std::size_t entries = 0;
  for (const auto& [k, v] : g.dict) entries += py_to_int64_list(v, "graph").size();
  EXPECT_EQ(entries, 10858u);
  EXPECT_EQ(py_to_int64_list(*g.find(std::int64_t{2707}), "g"),
            (std::vector<std::int64_t>{598, 165, 1473, 2706}));
  const PyValue y = read_pickle(root + "/cora/planetoid/ind.cora.y");
  ASSERT_EQ(y.kind, Kind::ndarray);
  EXPECT_EQ(y.array.shape, (std::vector<std::int64_t>{140, 7}));
}

TEST(Pickle, ReadsObjectMembersOfTheAmazonComputersNpz) {
  const std::string root = test::shared_datasets();
  if (root.empty()) GTEST_SKIP() << "shared datasets not present";
  const std::string path = root + "/amazon-computers/amazon_cs.npz";
  const auto arrays = read_npz(path);
  auto object_member = [&](const std::string& name) {
    const NpyArray& a = arrays.at(name);
    EXPECT_EQ(a.type, NpyType::object);
    PyValue v = parse_pickle(a.data, path + ":" + name + ".npy");
    EXPECT_EQ(v.kind, Kind::ndarray);
    EXPECT_TRUE(v.array.shape.empty());
    EXPECT_EQ(v.items.size(), 1u);
    return v.items.at(0);
  };
  const PyValue adj = object_member("adj_matrix");
  ASSERT_EQ(adj.kind, Kind::csr);
  EXPECT_EQ(adj.rows, 13752);
  EXPECT_EQ(adj.cols, 13752);
  EXPECT_EQ(adj.indices.size(), 287209u);
  const PyValue attr = object_member("node_attr");
  ASSERT_EQ(attr.kind, Kind::csr);
  EXPECT_EQ(attr.cols, 767);
  EXPECT_EQ(attr.indptr.back(), 3675081);
  EXPECT_EQ(std::vector<std::int64_t>(attr.indices.begin(), attr.indices.begin() + 5),
            (std::vector<std::int64_t>{646, 129, 361, 144, 325}));
  const PyValue meta = object_member("metadata");
  ASSERT_EQ(meta.kind, Kind::dict);
  const auto names = py_to_strings(*meta.find("class_names"), "class_names");
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names[1], "Data Storage");
  EXPECT_EQ(arrays.at("node_label").type, NpyType::i4);
}

}  // namespace
}  // namespace halognn
