#pragma once
/// @file partition_io.hpp
/// The partition directory (see docs/partitioning.md): manifest.json plus one binary file per
/// rank (part-00000.bin, ...). Rank r reads only the manifest and its own file; every file carries
/// a CRC32 that the reader checks, and the manifest records each file's size and CRC32.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/json.hpp"
#include "partition/local_partition.hpp"
#include "partition/partition.hpp"

namespace halognn {

/// Version of the manifest and of the rank file layout that writers write; readers also read
/// version 2 and reject any other. Version 2 added the partition run id (manifest "run_id", rank
/// file header), version 3 sparsified features (rank file header field and sections "SPCB",
/// "SPPO"; manifest "features").
inline constexpr std::int64_t kPartitionFormatVersion = 3;
/// The manifest's "format" value.
inline constexpr const char* kPartitionFormatName = "halognn-partition";

/// "part-00003.bin" for rank 3.
std::string partition_file_name(Rank rank);

/// zlib's CRC-32 of n more bytes after `crc` (any length: fed to zlib in 1 GiB pieces).
std::uint32_t crc_update(std::uint32_t crc, const void* data, std::size_t n);

/// A short hex hash of the dataset's identity: node count, edge arrays, feature shape, classes
/// and labels. Two datasets with the same fingerprint give the same partitions.
std::string dataset_fingerprint(const Dataset& ds);

/// The same fingerprint from the sizes and `data_crc`, the zlib CRC32 of the edge sources (int64),
/// then the destinations (int64), then the labels (int32) or the label matrix: for a caller that
/// never holds the whole dataset and combines the CRCs of slices (crc32_combine).
std::string dataset_fingerprint(GlobalId num_nodes, std::int64_t num_features,
                                std::int32_t num_classes, std::int64_t num_edges,
                                std::uint32_t data_crc);

/// Whether `dir` holds a halognn partition (a manifest of this format): such a directory may be
/// replaced by a new partition run.
bool is_partition_dir(const std::filesystem::path& dir);

/// A fresh id for one halognn-partition run: a hash of the clock, the process and the host, so
/// two runs (even of the same data and options) get different ids. Not a modelling choice: it
/// only tells runs apart.
std::uint64_t new_partition_run_id();

/// The manifest's form of a run id: 16 lowercase hex digits.
std::string format_run_id(std::uint64_t id);

/// Size and checksum of one written rank file.
struct PartitionFileInfo {
  std::string file;          ///< name inside the partition directory
  std::uint64_t bytes = 0;   ///< whole file size
  std::uint32_t crc32 = 0;   ///< zlib CRC32 of every byte before the 4-byte trailer
};

/// Writes one rank file (versioned header, sections, CRC32 trailer).
PartitionFileInfo write_local_partition_file(const LocalPartition& lp, const std::string& path);

/// Reads and validates one rank file on its own (header, sections, CRC32, invariants).
LocalPartition read_local_partition_file(const std::string& path);

/// Partitions `ds` (already turned into `g` and assigned `parts` under `cfg`) into the directory
/// `out`: everything is written into "<out>.tmp.<pid>" and then renamed to `out`. An existing
/// `out` is replaced only when it is a partition directory (has a halognn-partition manifest) or
/// empty; otherwise ConfigError. Returns the manifest that was written.
/// @param report             when not null, receives the partition report
/// @param removed_leftovers  when not null, receives the "<out>.tmp.<pid>" leftovers of killed
///                           runs that were removed first (for the tool to report)
Json write_partition_dir(const Dataset& ds, const GlobalGraph& g, const std::vector<Rank>& parts,
                         const PartitionConfig& cfg, const std::string& out,
                         PartitionReport* report = nullptr,
                         std::vector<std::string>* removed_leftovers = nullptr);

/// Writes `g` in the METIS graph format (header "N M", then one line of 1-based neighbours per
/// vertex), for gpmetis or other external partitioners. Written atomically.
void write_metis_graph(const GlobalGraph& g, const std::string& path);

/// Reads and checks "<dir>/manifest.json" (format name and version, run id, the dataset's sizes).
Json read_partition_manifest(const std::string& dir);

/// Rank `rank`'s part of the partition in `dir`, for a job of `world_size` ranks. Checks the
/// manifest, that its part count equals `world_size`, the file's size and CRC32 against the
/// manifest, its run id, feature and class counts against the manifest's, and the structural
/// invariants. Errors are InputError naming the file. What one rank cannot see (the other ranks'
/// files) is checked by check_partition_agreement (partition_agreement.hpp).
LocalPartition read_local_partition(const std::string& dir, Rank rank, Rank world_size);

}  // namespace halognn
