import struct,subprocess,re,glob,sys
def bundles(path):
    d=open(path,'rb').read()
    out=set(); o=0
    while True:
        o=d.find(b'CCOB',o)
        if o<0: break
        ver,meth=struct.unpack_from('<HH',d,o+4)
        if ver==3:
            total,unc=struct.unpack_from('<QQ',d,o+8); hdr=32
        else:
            total,unc=struct.unpack_from('<II',d,o+8); hdr=24
        raw=subprocess.run(['zstd','-d','-c'],input=d[o+hdr:o+total],capture_output=True).stdout
        out|=set(x.decode() for x in re.findall(rb'amdgcn-amd-amdhsa-[-a-z]*-(gfx[0-9a-f]+[:a-z+-]*)',raw))
        o+=4
    return out
allx=set()
for f in sorted(glob.glob(sys.argv[1]+'/*/*.so')):
    b=bundles(f); allx|=b
print(' '.join(sorted(allx, key=lambda g:(len(g),g))))
