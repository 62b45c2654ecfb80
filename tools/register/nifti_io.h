// NIfTI input and output through Debian's NIfTI library (nifti2_io, which reads NIfTI-1 and
// NIfTI-2, plain or gzipped). Every failure is a std::runtime_error with a one-line message.
#pragma once

#include <string>

#include "volume.h"

namespace gsreg {

// Reads a 3-D volume (.nii, .nii.gz, or a .hdr/.img pair) as float, scaled by scl_slope and
// scl_inter. The affine is the sform if set, else the qform; a file with neither gets its pixdim
// spacing and is centred on the world origin. Non-finite float voxels read as 0 (the NIfTI
// library's doing); voxels that scl_slope/scl_inter make non-finite are an error.
Volume read_nifti(const std::string& path);

// Writes a NIfTI-1 float32 volume (gzipped when the name ends in .gz), affine as sform and qform.
void write_nifti(const std::string& path, const Volume& v);

// NOTE [ Displacement field files ]
// The field is written as a 5-D NIfTI-1 float32 image (x, y, z, 1, 3), intent DISPVECT (1006),
// holding the displacement in world units (mm) along the world axes of `affine` (NIfTI's RAS
// frame): world(x) + d(x) is where the moving image is sampled for fixed voxel x.
void write_nifti_field(const std::string& path, const Field& u, const Mat4& affine);
// The inverse: the field back in voxels of the file's grid.
Field read_nifti_field(const std::string& path, Mat4* affine);

}  // namespace gsreg
