import torch, statistics
exec(open('bench/gemm_shapes_cuda.py').read().split('def run(prec)')[0])
B,H,K,D=500,100,10,784
for prec in ("fp32","tf32"):
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    Y=torch.randn(B,H,device=dev); dY=torch.randn(B,K,device=dev); G2=torch.empty(K,H,device=dev)
    G2t=torch.empty(H,K,device=dev); dYt=dY.t().contiguous(); X=torch.randn(B,D,device=dev)
    W1=torch.randn(H,D,device=dev); b1=torch.randn(H,device=dev); Yo=torch.empty(B,H,device=dev)
    dH=torch.randn(B,H,device=dev); G1=torch.empty(H,D,device=dev)
    rows={
     "G2=dY^T@Y (mm)": lambda: torch.mm(dY.t(),Y,out=G2),
     "G2^T=Y^T@dY into G2.t() view": lambda: torch.mm(Y.t(),dY,out=G2.t()),
     "G2t=Y^T@dY [100,10]": lambda: torch.mm(Y.t(),dY,out=G2t),
     "G2=dYt@Y (dYt contiguous)": lambda: torch.mm(dYt,Y,out=G2),
     "G2 via einsum/bmm": lambda: torch.bmm(dY.t().unsqueeze(0),Y.unsqueeze(0)),
     "G2 via (dY[:,:,None]*Y[:,None,:]).sum(0)": lambda: (dY.unsqueeze(2)*Y.unsqueeze(1)).sum(0),
     "G1=dH^T@X into G1": lambda: torch.mm(dH.t(),X,out=G1),
     "G1^T=X^T@dH into G1.t()": lambda: torch.mm(X.t(),dH,out=G1.t()),
     "addmm b1+X@W1^T": lambda: torch.addmm(b1,X,W1.t(),out=Yo),
     "mm X@W1^T then add_ b1": lambda: torch.mm(X,W1.t(),out=Yo).add_(b1),
     "addmm with beta=0 then add_": lambda: torch.addmm(Yo,X,W1.t(),beta=0,out=Yo).add_(b1),
    }
    for n,f in rows.items(): print(f"{prec} {n:44s} {timed(f):8.2f} us")
