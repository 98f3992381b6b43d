#include "training/model_selection.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {

ModelSelection::Verdict ModelSelection::update(std::int64_t t, double val_score, double val_loss) {
  Verdict v;
  switch (by_) {
    case SelectBy::score:
      v.best = v.progress = val_score > best_score_;
      break;
    case SelectBy::loss:
      v.best = v.progress = val_loss < best_loss_;
      break;
    case SelectBy::both: {
      // Ties count, as in the reference implementation of GAT.
      const bool score_ok = val_score >= best_score_, loss_ok = val_loss <= best_loss_;
      v.progress = score_ok || loss_ok;
      v.best = score_ok && loss_ok;
      break;
    }
  }
  if (best_epoch_ < 0) v.best = v.progress = true;
  best_score_ = std::max(best_score_, val_score);
  best_loss_ = std::min(best_loss_, val_loss);
  if (v.best) best_epoch_ = t;
  if (v.progress) progress_epoch_ = t;
  return v;
}

bool ModelSelection::should_stop(std::int64_t t) const {
  return patience_ > 0 && progress_epoch_ >= 0 && t - progress_epoch_ >= patience_;
}

void ParameterSnapshot::save(const std::vector<Parameter*>& params) {
  if (values_.size() != params.size()) {
    values_.clear();
    for (const Parameter* p : params)
      values_.emplace_back(p->value.rows(), p->value.cols(), p->value.device_ptr());
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Device& dev = *params[i]->value.device_ptr();
    kernels::copy(dev, params[i]->value.view(), values_[i].view());
  }
}

void ParameterSnapshot::restore(const std::vector<Parameter*>& params) const {
  GNN_ASSERT(values_.size() == params.size(), "restore: the snapshot holds ", values_.size(),
             " parameters, the model ", params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Device& dev = *params[i]->value.device_ptr();
    kernels::copy(dev, values_[i].view(), params[i]->value.view());
  }
}

void ModelSelection::save(StateWriter& w) const {
  StateWriter sw = w.sub("selection");
  sw.put_int("best_epoch", best_epoch_);
  sw.put_int("progress_epoch", progress_epoch_);
  sw.put_double("best_score", best_score_);
  sw.put_double("best_loss", best_loss_);
}

void ModelSelection::load(const StateReader& r) {
  const StateReader sr = r.sub("selection");
  best_epoch_ = sr.get_int("best_epoch");
  progress_epoch_ = sr.get_int("progress_epoch");
  best_score_ = sr.get_double("best_score");
  best_loss_ = sr.get_double("best_loss");
}

void ParameterSnapshot::save_state(StateWriter& w, const std::vector<Parameter*>& params) const {
  StateWriter bw = w.sub("best");
  bw.put_int("saved", empty() ? 0 : 1);
  if (empty()) return;
  GNN_ASSERT(values_.size() == params.size(), "snapshot of ", values_.size(), " parameters, the model has ",
             params.size());
  for (std::size_t i = 0; i < params.size(); ++i) bw.put(params[i]->name, values_[i]);
}

void ParameterSnapshot::load_state(const StateReader& r, const std::vector<Parameter*>& params) {
  const StateReader br = r.sub("best");
  values_.clear();
  if (br.get_int("saved") == 0) return;
  for (const Parameter* p : params) {
    values_.emplace_back(p->value.rows(), p->value.cols(), p->value.device_ptr());
    br.get(p->name, values_.back());
  }
}

}  // namespace halognn
