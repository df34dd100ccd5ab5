// The main() of a standalone compiled program: no Python. It reads the parameters from
// Paddle's files (a directory of one LoDTensor stream per variable, or a combined file of
// the streams in the order the generator lists), the feeds from .npy files, runs
// fluid_run, and writes each fetched variable to <out dir>/<name>.npy ('/' as '_'). (The
// CUDA program's main, fluid_native_cuda_main.cuh, runs the same readers and writer around
// device memory.)
//
//   ./model PARAMS FEED.npy... OUT_DIR
#pragma once

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

namespace fluid_native {

enum Role { kFeed = 0, kPersistable = 1, kTemporary = 2, kScratch = 3 };

struct VarInfo {
  const char* name;
  int role;
  const char* descr;  // the .npy dtype ("<f4", "<i8", ...)
  int paddle_dtype;   // VarType's code of the element type
  int itemsize;
  int ndim;
  int64_t dims[8];
};

inline int64_t numel(const VarInfo& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.dims[i];
  return n;
}

inline void fail(const std::string& what) {
  fprintf(stderr, "fluid_nb compiled program: %s\n", what.c_str());
  exit(2);
}

struct File {
  std::vector<unsigned char> bytes;
  size_t pos = 0;
  std::string path;
  explicit File(const std::string& p) : path(p) {
    FILE* f = fopen(p.c_str(), "rb");
    if (!f) fail("cannot open " + p);
    unsigned char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
    fclose(f);
  }
  const unsigned char* take(size_t n, const char* what) {
    if (pos + n > bytes.size())
      fail(path + ": " + what + " expected at byte " + std::to_string(pos) +
           ", but the file ends");
    const unsigned char* at = bytes.data() + pos;
    pos += n;
    return at;
  }
  template <class T> T read(const char* what) {
    T value;
    memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
};

inline uint64_t varint(const unsigned char*& p, const unsigned char* end) {
  uint64_t value = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    const unsigned char b = *p++;
    value |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return value;
  }
  fail("a malformed TensorDesc");
  return 0;
}

inline int64_t paddle_itemsize(int dtype) {
  switch (dtype) {
    case 0: case 20: case 21: return 1;   // bool, uint8, int8
    case 1: case 4: case 22: return 2;    // int16, float16, bfloat16
    case 2: case 5: return 4;             // int32, float32
    case 3: case 6: return 8;             // int64, float64
  }
  fail("an unknown element type " + std::to_string(dtype));
  return 0;
}

// one LoDTensor stream record into data (its dtype and dims must be the variable's); with
// no variable, the record is skipped (a combined file's parameter the program does not use)
inline void read_tensor(File& f, const VarInfo* var, void* data) {
  f.read<uint32_t>("a version");
  const uint64_t levels = f.read<uint64_t>("the LoD level count");
  for (uint64_t i = 0; i < levels; ++i) f.take(f.read<uint64_t>("a LoD level's size"), "a LoD");
  f.read<uint32_t>("a tensor version");
  const int32_t size = f.read<int32_t>("the TensorDesc size");
  const unsigned char* p = f.take(size, "the TensorDesc");
  const unsigned char* end = p + size;
  int dtype = -1;
  std::vector<int64_t> dims;
  while (p < end) {
    const uint64_t key = varint(p, end);
    if (key == (1 << 3 | 0)) {
      dtype = (int)varint(p, end);
    } else if (key == (2 << 3 | 0)) {
      dims.push_back((int64_t)varint(p, end));
    } else if (key == (2 << 3 | 2)) {  // packed dims
      const uint64_t n = varint(p, end);
      const unsigned char* stop = p + n;
      while (p < stop) dims.push_back((int64_t)varint(p, stop));
    } else {
      fail(f.path + ": an unknown TensorDesc field");
    }
  }
  if (!var) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    f.take(count * paddle_itemsize(dtype), "the tensor's data");
    return;
  }
  const VarInfo& v = *var;
  bool same = dtype == v.paddle_dtype && (int)dims.size() == v.ndim;
  for (int i = 0; same && i < v.ndim; ++i) same = dims[i] == v.dims[i];
  if (!same) fail(f.path + ": variable " + v.name + " expected the dtype and shape compiled");
  memcpy(data, f.take(numel(v) * v.itemsize, "the tensor's data"), numel(v) * v.itemsize);
}

// a C-order .npy file of the variable's dtype and shape into data
inline void read_npy(const std::string& path, const VarInfo& v, void* data) {
  File f(path);
  const unsigned char* magic = f.take(8, "the .npy magic");
  if (memcmp(magic, "\x93NUMPY", 6) != 0) fail(path + ": a .npy file expected");
  const size_t header = magic[6] == 1 ? f.read<uint16_t>("the header size")
                                      : f.read<uint32_t>("the header size");
  std::string text((const char*)f.take(header, "the header"), header);
  std::string shape = "(";
  for (int i = 0; i < v.ndim; ++i)
    shape += std::to_string(v.dims[i]) + (v.ndim == 1 ? "," : i + 1 < v.ndim ? ", " : "");
  shape += ")";
  if (text.find(std::string("'descr': '") + v.descr + "'") == std::string::npos ||
      text.find("'fortran_order': False") == std::string::npos ||
      text.find("'shape': " + shape) == std::string::npos)
    fail(path + ": feed " + v.name + " expected dtype " + v.descr + " and shape " + shape +
         ", but the header says " + text);
  memcpy(data, f.take(numel(v) * v.itemsize, "the data"), numel(v) * v.itemsize);
}

inline void write_npy(const std::string& path, const VarInfo& v, const void* data) {
  std::string shape = "(";
  for (int i = 0; i < v.ndim; ++i)
    shape += std::to_string(v.dims[i]) + (v.ndim == 1 ? "," : i + 1 < v.ndim ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + v.descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  const std::string tmp = path + ".part";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f) fail("cannot write " + tmp);
  const unsigned char lead[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t size = (uint16_t)header.size();
  fwrite(lead, 1, 8, f);
  fwrite(&size, 2, 1, f);
  fwrite(header.data(), 1, header.size(), f);
  fwrite(data, v.itemsize, numel(v), f);
  if (fclose(f) != 0 || rename(tmp.c_str(), path.c_str()) != 0) fail("cannot write " + path);
}

inline bool is_directory(const std::string& path) {
  FILE* f = fopen((path + "/.").c_str(), "rb");
  if (f) fclose(f);
  return f != nullptr;
}

// a parameter's file in a folder of them (Paddle writes a name with '/' into a subfolder);
// a name that is absolute or has a '..' part would reach outside the folder: refused (a
// combined file holds such names)
inline std::string file_in(const std::string& folder, const char* name) {
  const std::string n = name;
  bool outside = n.empty() || n[0] == '/';
  for (size_t start = 0; start <= n.size() && !outside;) {
    size_t end = n.find('/', start);
    if (end == std::string::npos) end = n.size();
    outside = n.compare(start, end - start, "..") == 0;
    start = end + 1;
  }
  if (outside)
    fail(folder + ": parameter names inside the folder expected, but a name is absolute or "
         "has a '..' part (save the parameters into one combined file)");
  return folder + "/" + n;
}

// whether argv is PARAMS FEED.npy... OUT_DIR, with the usage line on stderr when it is not
inline bool check_usage(int argc, char** argv, const VarInfo* vars, int count) {
  int feeds = 0;
  for (int i = 0; i < count; ++i) feeds += vars[i].role == kFeed;
  if (argc == feeds + 3) return true;
  fprintf(stderr, "usage: %s PARAMS", argv[0]);
  for (int i = 0; i < count; ++i)
    if (vars[i].role == kFeed) fprintf(stderr, " %s.npy", vars[i].name);
  fprintf(stderr, " OUT_DIR\n  PARAMS: the saved model as `fluid-nb compile` took it (its "
          "folder, x.pdmodel, the prefix x, __model__), its parameter file (x.pdiparams, "
          "__params__) or a folder of per-parameter files\n");
  return false;
}

inline bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

inline bool is_file(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f) fclose(f);
  return f != nullptr && !is_directory(path);
}

// where the parameters of PARAMS are, for every path `fluid-nb compile` accepts for a
// model: a folder with one combined file (__params__ or x.pdiparams) or with a file per
// parameter, x.pdmodel or __model__ (the parameters beside it), the prefix x, or the
// parameter file itself. combined: one file of every persistable's record, sorted by name
inline std::string params_location(const std::string& given, bool* combined) {
  *combined = true;
  if (is_directory(given)) {
    if (is_file(given + "/__params__")) return given + "/__params__";
    std::string found;
    int several = 0;
    if (DIR* dir = opendir(given.c_str())) {
      while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (ends_with(name, ".pdiparams")) found = name, ++several;
      }
      closedir(dir);
    }
    if (several > 1)
      fail(given + ": one x.pdiparams expected in the model folder, but it holds " +
           std::to_string(several) + ": name the file");
    if (several == 1) return given + "/" + found;
    *combined = false;
    return given;
  }
  if (ends_with(given, ".pdmodel")) {
    const std::string file = given.substr(0, given.size() - 8) + ".pdiparams";
    if (!is_file(file))
      fail(given + ": its parameters expected in " + file + ", but there is no such file");
    return file;
  }
  if (ends_with(given, "__model__") && is_file(given)) {
    std::string folder = given.substr(0, given.size() - 9);
    while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
    if (folder.empty()) folder = ".";
    if (is_file(folder + "/__params__")) return folder + "/__params__";
    *combined = false;
    return folder;
  }
  if (!is_file(given) && is_file(given + ".pdiparams")) return given + ".pdiparams";
  return given;
}

// every variable's host buffer, zeroed, with the parameters and feeds of argv read into
// theirs. params: every persistable of the program, sorted by name (a combined file's
// order), as indices into vars (-1: not used by the compiled code)
inline std::vector<void*> read_inputs(char** argv, const VarInfo* vars, int count,
                                      const int* params, int param_count) {
  std::vector<void*> pointers(count);
  for (int i = 0; i < count; ++i) {
    pointers[i] = calloc(numel(vars[i]) > 0 ? numel(vars[i]) : 1, vars[i].itemsize);
    if (!pointers[i]) fail("out of memory");
  }
  bool combined = true;
  const std::string where = params_location(argv[1], &combined);
  if (!combined) {  // one file per variable, named after it
    for (int i = 0; i < count; ++i)
      if (vars[i].role == kPersistable) {
        File f(file_in(where, vars[i].name));
        read_tensor(f, &vars[i], pointers[i]);
      }
  } else {  // combined: every persistable's record, sorted by name
    File f(where);
    for (int k = 0; k < param_count; ++k) {
      const int i = params[k];
      read_tensor(f, i < 0 ? nullptr : &vars[i], i < 0 ? nullptr : pointers[i]);
    }
    if (f.pos != f.bytes.size()) fail(where + ": more records than the program's parameters");
  }
  int arg = 2;
  for (int i = 0; i < count; ++i)
    if (vars[i].role == kFeed) read_npy(argv[arg++], vars[i], pointers[i]);
  return pointers;
}

// the file of a fetched variable in the output folder: its name with each '/' as '_' (as
// `fluid-nb run --save-dir` names them), so that no name reaches outside the folder
inline std::string fetch_file(const std::string& out, const char* name) {
  std::string file = name;
  for (char& c : file)
    if (c == '/') c = '_';
  return out + "/" + file + ".npy";
}

// each fetched variable's host buffer to <out>/<name>.npy ('/' in the name as '_')
inline void write_fetches(const std::string& out, const VarInfo* vars, const int* fetches,
                          int fetch_count, const std::vector<void*>& pointers) {
  for (int k = 0; k < fetch_count; ++k)
    write_npy(fetch_file(out, vars[fetches[k]].name), vars[fetches[k]],
              pointers[fetches[k]]);
}

// the C++ program's main(): run on the host buffers themselves
inline int standalone_main(int argc, char** argv, const VarInfo* vars, int count,
                           const int* params, int param_count,
                           const int* fetches, int fetch_count, void (*run)(void**)) {
  if (!check_usage(argc, argv, vars, count)) return 2;
  std::vector<void*> pointers = read_inputs(argv, vars, count, params, param_count);
  run(pointers.data());
  write_fetches(argv[argc - 1], vars, fetches, fetch_count, pointers);
  for (void* p : pointers) free(p);
  return 0;
}

}  // namespace fluid_native
