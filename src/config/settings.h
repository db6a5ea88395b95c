// The daemon's settings as one table, a row per setting: the Config member
// it fills, its flag and environment variable names, its path in NVIDIA's
// config file, how its text is parsed and bounded, whether a reload may
// change it, and its help. The command line (cmd/flags.cc), the config
// file's fields (config_file.cc), which settings a flag gave (load.h), the
// reload check and the table in docs/configuration.md are derived from it;
// settings_test holds the docs against it.
//
// Adding a setting: its member in Config (config.h), its row in
// settings.cc, and its use.
#ifndef GDP_CONFIG_SETTINGS_H_
#define GDP_CONFIG_SETTINGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace gdp {

class YamlFieldReader;  // config/yaml_fields.h
struct YamlField;

// How one setting's value is parsed, shown, bounded and compared; made by
// the typed helpers in settings.cc (Text, Path, Bool, Enum, Duration, ...).
// Implementations are immutable and thread-safe.
class SettingValue {
 public:
  // What the setting's flag takes, for the command line parser.
  enum class Kind {
    kText,  // one string
    kBool,  // bare is true, or =true / =false
    kInt,   // a whole number
    kList,  // strings, comma-separated or repeated
  };

  virtual ~SettingValue() = default;

  virtual Kind kind() const = 0;
  // The names the flag accepts (each item, for kList); empty: any text.
  virtual std::vector<std::string> Choices() const { return {}; }
  // Whether a kInt must be positive.
  virtual bool Positive() const { return false; }

  // The value in `config` as the flag spells it: "1m", "uuid", "true",
  // "envvar,cdi-cri".
  virtual std::string Get(const Config& config) const = 0;
  // Sets the value in `config` from the flag's text (after the command
  // line parser checked the kind and the choices).
  // Result on failure: InvalidArgument "must be ..., got '<text>'" (the
  // caller names the flag).
  virtual absl::Status Set(absl::string_view text, Config* config) const = 0;
  // Reads the config file's field `f` into `config`. Result: false on a bad
  // value, which `reader` keeps naming the file, line and field.
  virtual bool Read(YamlFieldReader& reader, const YamlField& f,
                    Config* config) const = 0;
  // The setting's own bound on its value wherever it came from (an
  // absolute path, say); OK if it has none.
  // Result on failure: InvalidArgument "<what is wrong>" (the caller names
  // the setting).
  virtual absl::Status Check(const Config& config) const = 0;

  virtual void Copy(const Config& from, Config* to) const = 0;
  virtual bool Equal(const Config& a, const Config& b) const = 0;
};

// One row of the table.
struct Setting {
  // The command line parser's names, comma-separated; the first one names
  // the setting: "--driver-root,--nvidia-driver-root".
  absl::string_view flags = {};
  // Environment variables, comma-separated; the first beats the second, and
  // a flag beats both. Empty: none.
  absl::string_view env = {};
  // Its path in the config file ("flags.nvidiaDriverRoot"); empty: the file
  // cannot give it. A flag or variable that gives it beats the file.
  absl::string_view file = {};
  std::shared_ptr<const SettingValue> value = nullptr;
  // Empty if a reload may change it; else what a refused reload calls it
  // ("driver root").
  absl::string_view restart = {};
  absl::string_view help = {};  // for --help
  absl::string_view doc = {};   // for the docs table (Markdown); empty: help

  // The first flag: "--driver-root".
  absl::string_view name() const;
  // How messages name it: its path in the config file if it has one, else
  // its name.
  absl::string_view path() const { return file.empty() ? name() : file; }
  std::vector<absl::string_view> env_names() const;
};

// Every setting, in the order of --help and of the docs table.
const std::vector<Setting>& Settings();

// The setting whose config-file path is `path`; nullptr if none.
const Setting* SettingAtPath(absl::string_view path);

// OK if a reload from `running` to `next` changes no setting that needs a
// restart. Result on failure: InvalidArgument "the <what> cannot change on
// reload; restart the plugin".
absl::Status CheckReloadable(const Config& running, const Config& next);

// The Markdown table of every setting that docs/configuration.md holds:
// flag, environment, config file, default and meaning.
std::string SettingsTable();

}  // namespace gdp

#endif  // GDP_CONFIG_SETTINGS_H_
