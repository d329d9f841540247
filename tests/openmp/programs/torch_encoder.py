"""A small randomly initialised TransformerEncoder doing CPU inference
with the intra-op threads OMP_NUM_THREADS asks for; prints an output sum."""
import os

import torch

from py_common import report_runtimes

torch.manual_seed(0)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                         batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
x = torch.randn(8, 64, 128)
with torch.no_grad():
    total = sum(float(model(x).abs().sum()) for _ in range(3))
print(f"result: {total:.9e}")
print("threads:", torch.get_num_threads())
report_runtimes()
