// Fuzzes the saved graph format: graph_from_json on the input (graph JSON text) and, where it is
// accepted, the round trip: saving the loaded graph and loading that again must give the same
// text. Also feeds the input to the model manifest parser (model.json).
#include <dagrad/core/graph_format.hpp>
#include <dagrad/core/saved_model.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::as_string(data, size);
  fuzz::accepted([&] { parse_model_manifest(text, "fuzz model.json"); });
  LoadedGraph loaded;
  if (!fuzz::accepted([&] { loaded = graph_from_json(text, "fuzz graph"); })) return 0;
  std::string saved, saved_again;
  if (!fuzz::accepted([&] { saved = graph_to_json(*loaded.graph, loaded.devices); })) {
    fuzz::finding("a loaded graph cannot be saved");
  }
  if (!fuzz::accepted([&] {
        const LoadedGraph again = graph_from_json(saved, "fuzz graph, saved");
        saved_again = graph_to_json(*again.graph, again.devices);
      })) {
    fuzz::finding("a saved graph does not load");
  }
  if (saved != saved_again) fuzz::finding("saving a loaded graph changed it");
  return 0;
}
