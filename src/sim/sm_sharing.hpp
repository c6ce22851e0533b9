// Kernels sharing the SMs (DeviceModel::kernels_share_sms).
//
// A kernel whose grid cannot fill the GPU -- a small chunk, the last partial
// wave of blocks -- leaves SMs idle that another stream's kernel takes. Each
// running kernel asks for its gpu_share of the SMs (the fraction it keeps
// busy alone); when the asks add up to more than the GPU, the SMs are split
// max-min fairly and every kernel slows by what it got over what it asked.
// So small kernels on several streams run as fast together as their total
// work allows, and a kernel that fills the GPU alone still runs alone.
#pragma once

#include <span>

namespace overlap::sim {

/// For running kernels asking `demand[i]` of the SMs (each in (0, 1]),
/// writes each one's speed relative to running alone (in (0, 1]) to `speed`.
void share_sms(std::span<const double> demand, std::span<double> speed);

}  // namespace overlap::sim
